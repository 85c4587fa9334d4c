// pp-exchanges-exposed: an interleaved pipeline waiting for its exchanges on the compute stream
// (NeMo's LoRA recipe for Llama 3 70B: TP 2, PP 4 of 20 chunks each, no comm-overlap callback), a
// real share of its stages' time once the stages sit on different nodes, with the overlap as its
// fix, priced on the same GPUs.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/check/detect.hpp"
#include "sim/cli/scenario.hpp"
#include "sim/core/format.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/plan/layout.hpp"
#include "sim/platform/topology.hpp"
#include "sim/search/diagnose.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kLora = test::source_dir() + "/scenarios/llama3-70b-lora-8gpu.json";

struct Checked {
  ResolvedInputs in;
  std::vector<Diagnostic> found;
};

// The LoRA scenario at `dp` copies of its 8-GPU layout (the global batch grown with them), with
// `extra` plan fields on top, and the pp-exchanges-exposed diagnostics diagnose() gives it.
Checked exchanges(std::int64_t dp, const std::map<std::string, std::string>& extra = {}) {
  InputRequest req;
  req.scenario = kLora;
  req.plan_flags = {{"dp", std::to_string(dp)}, {"gbs", std::to_string(32 * dp)}};
  for (const auto& [key, value] : extra) req.plan_flags[key] = value;
  Checked out{resolve_inputs(req), {}};
  const auto& in = out.in;
  const Partition part = build_partition(in.model, in.platform, in.plan, in.origin);
  const CostModel costs = compute_costs(in.model, in.platform, in.plan, part);
  for (auto& d : diagnose(in.model, in.platform, in.plan, part, costs)) {
    if (d.id == "pp-exchanges-exposed") out.found.push_back(std::move(d));
  }
  return out;
}

// On 32 GPUs each stage is a node of its own (TP 2 x DP 4), so every exchange crosses the
// network. Stage 1's 20 chunks each send their output on and their input's gradient back: 40
// messages a micro-batch of one micro-batch's hidden states split by sequence parallelism,
// 4,096 tokens x 8,192 x 2 bytes / 2 = 32 MiB, each on an idle network its route's latency
// plus its bytes over the route's narrowest link (the NIC).
TEST(PpExchanges, AnInterleavedPipelineWaitingAcrossNodes) {
  const auto [in, found] = exchanges(4);
  ASSERT_EQ(found.size(), 1u);
  const Diagnostic& d = found[0];
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_EQ(d.stage, 1);
  const Topology topology(in.platform, in.plan.world_size());
  const auto gpu = Layout(in.plan).group(Dim::kPP, 0);
  ASSERT_EQ(gpu.size(), 4u);
  EXPECT_NE(topology.node_of(gpu[1]), topology.node_of(gpu[2]));
  const double bytes = 4096.0 * 8192 * 2 / 2;
  const double to_next =
      topology.route_latency(gpu[1], gpu[2]) + bytes / topology.route_bandwidth(gpu[1], gpu[2]);
  const double to_previous =
      topology.route_latency(gpu[1], gpu[0]) + bytes / topology.route_bandwidth(gpu[1], gpu[0]);
  const double wait = 20 * (to_next + to_previous);
  EXPECT_NE(d.message.find("of 20 chunks per stage, 32.00 MiB each, crossing the network "
                           "between nodes, take " +
                           format_seconds(wait) + " per micro-batch, "),
            std::string::npos)
      << d.message;
  // The fix: the same plan with the exchanges overlapped, faster on the same GPUs.
  EXPECT_EQ(d.fix.rfind("without --no-overlap-p2p-comm (same GPUs): step ", 0), 0u) << d.fix;
  EXPECT_NE(d.fix.find(" % vs "), std::string::npos);
  EXPECT_EQ(d.fix.find("+"), std::string::npos) << d.fix;
}

// Where the stages share a node (8 GPUs) the exchanges run over NVLink, a small share of the
// stages' time; overlapped, or in a schedule that cannot overlap them (1F1B), nothing to report.
TEST(PpExchanges, NothingOverNvlinkOverlappedOrOutsideTheInterleavedSchedule) {
  EXPECT_TRUE(exchanges(1).found.empty());
  EXPECT_TRUE(exchanges(4, {{"overlap_p2p_comm", "true"}}).found.empty());
  EXPECT_TRUE(exchanges(4, {{"schedule", "1f1b"}, {"vp", "1"}, {"overlap_p2p_comm", "false"}})
                  .found.empty());
}

}  // namespace
}  // namespace trainsim
