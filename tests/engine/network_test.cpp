// Transfers and collectives on the modelled cluster against closed forms: the network model
// must neither invent nor hide contention (one NIC per GPU, non-blocking NVSwitch).
#include <gtest/gtest.h>

#include "sim/engine/engine.hpp"
#include "sim/graph/builder.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

constexpr double kGB = 1e9;

class H100Network : public ::testing::Test {
 protected:
  Platform h100_ = test::catalog_platform("h100-sxm-ndr");
  double nvlink_bw() const { return 450e9 * h100_.efficiency.nvlink; }
  double nic_bw() const { return 50e9 * h100_.efficiency.network; }
  double nvlink_lat() const { return 0.464e-6; }
  double nic_lat() const { return 1.0e-6; }
};

TEST_F(H100Network, OneGigabyteInsideANode) {
  const SimResult r = simulate_simgrid(test::transfers_graph(8, {{0, 1}}, kGB), Topology(h100_, 8));
  EXPECT_NEAR(r.step_time_s, 2 * nvlink_lat() + kGB / nvlink_bw(), 1e-12);
}

TEST_F(H100Network, OneGigabyteAcrossNodes) {
  const SimResult r =
      simulate_simgrid(test::transfers_graph(16, {{0, 8}}, kGB), Topology(h100_, 16));
  EXPECT_NEAR(r.step_time_s, 2 * nic_lat() + kGB / nic_bw(), 1e-12);
}

TEST_F(H100Network, EightConcurrentSameRailTransfersDoNotShare) {
  // GPU 0 of nodes 0..7 each send to GPU 0 of nodes 8..15: eight NICs, eight flows.
  std::vector<std::pair<int, int>> pairs;
  for (int k = 0; k < 8; ++k) pairs.emplace_back(8 * k, 8 * (k + 8));
  const SimResult r =
      simulate_simgrid(test::transfers_graph(128, pairs, kGB), Topology(h100_, 128));
  for (int k = 0; k < 8; ++k) {
    EXPECT_NEAR(r.ranks[static_cast<std::size_t>(8 * k)].end_s, 2 * nic_lat() + kGB / nic_bw(),
                1e-12);
  }
}

TEST(Network, FlowsOutOfOneNicShareIt) {
  // One GPU sends to four other nodes at once: its single NIC is the bottleneck.
  const Platform p = test::simple_platform(400, 0, 50, 1.0);
  const SimResult r = simulate_simgrid(
      test::transfers_graph(40, {{0, 8}, {0, 16}, {0, 24}, {0, 32}}, kGB), Topology(p, 40));
  EXPECT_NEAR(r.step_time_s, 2e-6 + 4 * kGB / 50e9, 1e-12);
}

TEST(Network, OversubscribedLeafUplinkIsShared) {
  // Two nodes per leaf at 2:1 oversubscription: the leaf's spine side carries one NIC's worth.
  // Nodes 0 and 1 (unit 0) both send to unit 1: the two flows share it.
  const Platform p = test::simple_platform(400, 0, 50, 1.0, 2, 2.0);
  const SimResult r =
      simulate_simgrid(test::transfers_graph(32, {{0, 16}, {8, 24}}, kGB), Topology(p, 32));
  EXPECT_NEAR(r.step_time_s, 2e-6 + 2 * kGB / 50e9, 1e-12);
}

TEST_F(H100Network, RingAllReduceOnOneNvSwitch) {
  // 2(n-1)/n S / B plus 2(n-1) steps of one NVLink round (up and down).
  const double S = 1 << 30;
  for (std::int32_t n : {8}) {
    std::vector<std::int32_t> members;
    for (std::int32_t i = 0; i < n; ++i) members.push_back(i);
    const SimResult r = simulate_simgrid(
        test::collective_graph(8, members, CollectiveKind::kAllReduce, S), Topology(h100_, 8));
    const double expected = 2.0 * (n - 1) / n * S / nvlink_bw() + 2.0 * (n - 1) * 2 * nvlink_lat();
    EXPECT_NEAR(r.step_time_s, expected, 1e-12);
    for (const auto& rank : r.ranks) {
      EXPECT_NEAR(rank.comm_s[static_cast<std::size_t>(CommKind::kTP)], expected, 1e-12);
    }
  }
}

TEST_F(H100Network, MergedAllReducesPayEveryCallsLatency) {
  // Forty calls of S/40 bytes on 4 GPUs: bandwidth term of S, latency of 40 x 2(n-1) steps.
  const double S = 512e6;
  const SimResult r =
      simulate_simgrid(test::collective_graph(8, {0, 1, 2, 3}, CollectiveKind::kAllReduce, S, 40),
                       Topology(h100_, 8));
  const double expected = 1.5 * S / nvlink_bw() + 40 * 6 * 2 * nvlink_lat();
  EXPECT_NEAR(r.step_time_s, expected, 1e-12);
}

TEST_F(H100Network, RingAllGatherAcrossNodes) {
  // One GPU per node on rail 0: every edge crosses the network.
  const double S = 1e9;
  const SimResult r =
      simulate_simgrid(test::collective_graph(32, {0, 8, 16, 24}, CollectiveKind::kAllGather, S),
                       Topology(h100_, 32));
  EXPECT_NEAR(r.step_time_s, 0.75 * S / nic_bw() + 3 * 2 * nic_lat(), 1e-12);
}

TEST_F(H100Network, PipelineTransferAcrossNodes) {
  // tp 8, pp 2: stage 0 on node 0, stage 1 on node 1. One micro-batch, no compute: the step is
  // the activation going forward and its gradient coming back, each S / B_nic + latency.
  Plan plan;
  plan.tp = 8;
  plan.pp = 2;
  plan.gbs = 1;
  plan.seq_len = 1;
  CostModel costs = test::uniform_costs(2, 0.0, 0.0);
  const double S = 256e6;
  for (auto& s : costs.stages) s.p2p_bytes = S;
  const SimResult r = simulate_simgrid(build_task_graph(plan, costs), Topology(h100_, 16));
  EXPECT_NEAR(r.step_time_s, 2 * (S / nic_bw() + 2 * nic_lat()), 1e-12);
  EXPECT_NEAR(r.ranks[0].comm_s[static_cast<std::size_t>(CommKind::kPP)], r.step_time_s, 1e-12);
}

}  // namespace
}  // namespace trainsim
