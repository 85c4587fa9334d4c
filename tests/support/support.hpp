#pragma once
// Helpers shared by the test suites: catalog access, synthetic platforms and hand-made graphs.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cost/stage_cost.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/kernel_db.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim::test {

std::string source_dir();
std::string data_path(const std::string& relative);  // under tests/data
Model catalog_model(const std::string& name);
/// A model of the seed scenarios (scenarios/seeds/models/NAME.json).
Model seed_model(const std::string& name);
Platform catalog_platform(const std::string& name);
/// The message validate_plan raises for `plan` and `model` on h100-sxm-ndr, or "(valid)".
std::string plan_error(const Plan& plan, const Model& model);

/// Metadata of a hand-made kernel database (a test GPU, a fixed date, method "synthetic").
KernelDbMeta synthetic_db_meta();
/// A kernel-database entry: `shape` with median time `seconds` and no spread.
KernelDbEntry db_entry(KernelShape shape, double seconds);

/// Megatron-LM's uniform partition of `model` over `pp` stages.
Partition uniform_partition(const Model& model, std::int64_t pp);
/// The virtual stages of `p` with no block that has parameters.
std::vector<std::int64_t> stages_without_parameters(const Partition& p);

/// A platform with round numbers: nvlink and NIC bandwidths in GB/s, latencies in us, and every
/// efficiency 1, so closed forms are easy to write.
Platform simple_platform(double nvlink_GBps, double nvlink_latency_us, double nic_GBps,
                         double nic_latency_us, std::int64_t nodes_per_leaf = 4,
                         double oversubscription = 1.0);

/// A cost model whose every (virtual) stage takes t_forward / t_backward per micro-batch, of
/// which t_weight is the weight gradient, and moves nothing: the pipeline schedule alone sets
/// the step time.
CostModel uniform_costs(std::int64_t stages, double t_forward, double t_backward,
                        double t_weight = 0);

/// A transfer per (src, dst) pair, all posted at time 0: one point-to-point batch per rank.
TaskGraph transfers_graph(std::int64_t world, const std::vector<std::pair<int, int>>& pairs,
                          double bytes);
/// One collective over `members` (ring order) of `bytes` per member, `count` calls merged.
TaskGraph collective_graph(std::int64_t world, const std::vector<std::int32_t>& members,
                           CollectiveKind kind, double bytes, std::int32_t count = 1);

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
/// Runs the trainsim binary with `args` (no shell), capturing both streams; in `cwd` when given.
CommandResult run_trainsim(const std::vector<std::string>& args, const std::string& cwd = "");
/// run_trainsim with TRAINSIM_DATA_DIR set to `data_dir` for the child (this process's value
/// restored after).
CommandResult run_trainsim_on_data(const std::string& data_dir,
                                   const std::vector<std::string>& args);
/// `trainsim run --model llama3.1-8b --platform h100-sxm-ndr --dp 8 --gbs 8 --seq-len 4096
/// --engine analytic --format json` with `extra` flags after them, its report parsed;
/// std::runtime_error with its error output when it does not exit 0.
nlohmann::json llama8b_report(const std::vector<std::string>& extra);
/// The default scenario, scenarios/nemotron4-340b.json (README's main job).
std::string default_scenario();
/// `trainsim run <default scenario> --engine analytic --format json` with `extra` flags after
/// them, its report parsed; std::runtime_error with its error output when it does not exit 0.
nlohmann::json default_scenario_report(const std::vector<std::string>& extra);

/// The binary started and running; finish() waits for it and reads its streams.
struct RunningTrainsim {
  int pid = -1;
  std::string out_path, err_path;
  CommandResult finish();
};
RunningTrainsim start_trainsim(const std::vector<std::string>& args, const std::string& cwd = "");

/// A fresh empty directory under the system temp dir, and a file writer for fixtures.
std::string make_temp_dir();
void write_file(const std::string& path, const std::string& content);
std::string read_file(const std::string& path);

}  // namespace trainsim::test
