// The plan pipeline of `trainsim run --engine analytic` on small plans: a scenario-like JSON
// ({"model": catalog name or model object, "platform": catalog name, "plan": {...},
// "full_simulation": bool}) read and checked, then the partition, the costs, the replay choice,
// the task graph, the analytic simulation and the diagnostics with their priced fixes, as
// run_or_check() runs them. Plans beyond 64 GPUs or 64 micro-batches are skipped, and models cut
// to 16 layers, so that one input takes milliseconds; a step time that is not a positive finite
// number is a finding.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include <nlohmann/json.hpp>

#include "sim/cli/scenario.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/graph/builder.hpp"
#include "sim/graph/symmetry.hpp"
#include "sim/plan/plan_schema.hpp"
#include "sim/platform/topology.hpp"
#include "sim/search/diagnose.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace trainsim;

constexpr const char* kFile = "fuzz.json";
constexpr std::int64_t kMaxGpus = 64;
constexpr std::int64_t kMaxMicrobatches = 64;
constexpr std::int64_t kMaxLayers = 16;

// "models/NAME.json" (how the seed scenarios name theirs) or NAME.
std::string model_name(std::string spec) {
  if (spec.starts_with("models/")) spec.erase(0, 7);
  if (spec.ends_with(".json")) spec.erase(spec.size() - 5);
  return spec;
}

Model read_model(JsonObject& o) {
  const nlohmann::json& v = o.raw("model");
  Model m = v.is_object() ? parse_model_json(v, kFile)
                          : fuzz::catalog_model(model_name(o.string("model")));
  m.num_layers = std::min(m.num_layers, kMaxLayers);
  validate_model(m, kFile);
  return m;
}

// A plan value as its flag takes it.
std::string flag_text(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  fail_input(where, "must be a number, a string or a boolean");
}

Plan read_plan(JsonObject& o, PlanOrigin& origin) {
  const nlohmann::json& v = o.raw("plan");
  if (!v.is_object()) o.fail("plan", "must be an object");
  const auto& names = plan_field_names();
  std::map<std::string, std::string> flags;
  for (const auto& [key, value] : v.items()) {
    const std::string where = o.where("plan") + "." + key;
    if (std::find(names.begin(), names.end(), key) == names.end()) fail_input(where, "unknown");
    flags[key] = flag_text(value, where);
    origin.where[key] = where;
  }
  Plan plan;
  apply_plan_flags(plan, flags);
  return plan;
}

// Small enough to take milliseconds.
bool small(const Plan& p) {
  for (std::int64_t size : {p.tp, p.pp, p.dp, p.cp, p.vp}) {
    if (size < 1 || size > kMaxGpus) return false;
  }
  return p.world_size() <= kMaxGpus && p.mbs <= kMaxGpus &&
         p.global_batch() <= kMaxMicrobatches * p.mbs * p.dp;
}

void run(const Model& model, const Platform& platform, const Plan& plan, const PlanOrigin& origin,
         bool full) {
  validate_plan(plan, model, platform, origin);
  const Partition partition = build_partition(model, platform, plan, origin);
  const CostModel costs = compute_costs(model, platform, plan, partition);
  const Topology topology(platform, plan.world_size());
  const ReplayChoice replay = choose_replay(plan, costs, topology, false, full);
  const TaskGraph graph = build_task_graph(plan, costs, replay.replay, replay.chains);
  EngineOptions options;
  options.compute_slowdown = platform.overlap.compute_slowdown;
  options.list_collectives = true;
  const SimResult sim = simulate(graph, topology, EngineKind::kAnalytic, options);
  if (!std::isfinite(sim.step_time_s) || sim.step_time_s <= 0) {
    std::fprintf(stderr, "step time %g s\n", sim.step_time_s);
    std::abort();
  }
  (void)diagnose(model, platform, plan, partition, costs, {},
                 full ? std::nullopt : std::optional<double>(sim.step_time_s));
}

}  // namespace

// Catalog entries are read before the first input (fuzz_support.hpp, warm_catalog).
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  trainsim::fuzz::warm_catalog();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::expect_input_errors([&] {
    const auto j = parse_json_text(fuzz::text_of(data, size), kFile);
    JsonObject o(j, kFile);
    o.allow({"name", "description", "notes", "published", "engine"});
    const Model model = read_model(o);
    const Platform& platform = fuzz::catalog_platform(o.string("platform"));
    PlanOrigin origin;
    const Plan plan = read_plan(o, origin);
    const bool full = o.optional_boolean("full_simulation").value_or(false);
    o.finish();
    if (small(plan)) run(model, platform, plan, origin, full);
  });
}
