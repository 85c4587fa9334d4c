// Collectives against their closed forms: ring, one ring per rail, NCCL's tree and which of them
// NCCL would pick, all-to-all and broadcast; and the model against nccl-tests on one DGX H100.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/collective/group_collectives.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// 8 GPUs per node; NVLink 400 GB/s with 0.5 us per link (1 us a route), NICs 50 GB/s with 2 us
// (4 us a route under one leaf).
const Topology& cluster() {
  static const Topology topo(test::simple_platform(400, 0.5, 50, 2.0, 64), 8 * 64);
  return topo;
}
constexpr double kNvl = 400e9, kNic = 50e9, kNvlLat = 1e-6, kNicLat = 4e-6;

Members range(std::int32_t first, std::int32_t n, std::int32_t stride = 1) {
  Members m;
  for (std::int32_t i = 0; i < n; ++i) m.push_back(first + i * stride);
  return m;
}

TEST(Collective, RouteFactsTheClosedFormsUse) {
  EXPECT_DOUBLE_EQ(cluster().route_latency(0, 1), kNvlLat);
  EXPECT_DOUBLE_EQ(cluster().route_latency(0, 8), kNicLat);
  EXPECT_DOUBLE_EQ(cluster().route_bandwidth(0, 1), kNvl);
  EXPECT_DOUBLE_EQ(cluster().route_bandwidth(0, 8), kNic);
}

TEST(Collective, RingInOneNode) {
  const GroupCollectives g(cluster(), range(0, 8));
  const double s = 1e9;
  EXPECT_EQ(g.choose(CollectiveKind::kAllReduce, s, 1).algorithm, Algorithm::kRing);
  EXPECT_NEAR(g.seconds(CollectiveKind::kAllReduce, Algorithm::kRing, s, 3),
              3 * 14 * kNvlLat + 1.75 * s / kNvl, 1e-15);
  EXPECT_NEAR(g.choose(CollectiveKind::kAllGather, s, 1).seconds, 7 * kNvlLat + 0.875 * s / kNvl,
              1e-15);
  EXPECT_NEAR(g.choose(CollectiveKind::kReduceScatter, s, 1).seconds,
              7 * kNvlLat + 0.875 * s / kNvl, 1e-15);
  // All-to-all: seven messages of S/8 leave each GPU's NVLink at once.
  EXPECT_EQ(g.choose(CollectiveKind::kAllToAll, s, 1).algorithm, Algorithm::kDirect);
  EXPECT_NEAR(g.choose(CollectiveKind::kAllToAll, s, 1).seconds, kNvlLat + 0.875 * s / kNvl, 1e-15);
  // Broadcast: a pipelined chain from the first member.
  EXPECT_NEAR(g.choose(CollectiveKind::kBroadcast, s, 1).seconds, 7 * kNvlLat + s / kNvl, 1e-15);
  EXPECT_EQ(g.flows(CollectiveKind::kBroadcast, Algorithm::kRing).size(), 7u);
}

// All-to-all across nodes (expert or context parallelism over InfiniBand): each GPU sends 1/n of
// its buffer to every other member, straight; what leaves through its NIC sets the time.
TEST(Collective, AllToAllAcrossNodes) {
  const double s = 1e9;
  // Two full nodes: 8 of the 16 shares cross the network, 7 stay on NVLink.
  const GroupCollectives two_nodes(cluster(), range(0, 16));
  EXPECT_EQ(two_nodes.choose(CollectiveKind::kAllToAll, s, 1).algorithm, Algorithm::kDirect);
  EXPECT_NEAR(two_nodes.choose(CollectiveKind::kAllToAll, s, 1).seconds,
              kNicLat + 8.0 / 16 * s / kNic, 1e-15);
  // One GPU on each of four nodes: three of four shares over the NIC, two calls.
  const GroupCollectives rail(cluster(), range(0, 4, 8));
  EXPECT_NEAR(rail.choose(CollectiveKind::kAllToAll, s, 2).seconds,
              2 * kNicLat + 3.0 / 4 * s / kNic, 1e-15);
  // The same four GPUs on one node: NVLink, eight times faster per byte.
  const GroupCollectives node(cluster(), range(0, 4));
  EXPECT_NEAR(node.choose(CollectiveKind::kAllToAll, s, 2).seconds,
              2 * kNvlLat + 3.0 / 4 * s / kNvl, 1e-15);
}

// Four GPUs on each of two nodes: four rings, each leaving every node through a different NIC,
// so each GPU sends one ring's share over its NIC and three over NVLink.
TEST(Collective, OneRingPerRail) {
  Members m = range(0, 4);
  for (auto x : range(8, 4)) m.push_back(x);
  EXPECT_EQ(ring_algorithm(cluster(), m), Algorithm::kRailRings);
  const auto cycles = rings(cluster(), m, Algorithm::kRailRings);
  ASSERT_EQ(cycles.size(), 4u);
  const auto& flows =
      collective_flows(cluster(), m, CollectiveKind::kAllReduce, Algorithm::kRailRings);
  for (const auto gpu : m) {
    int nic_out = 0, nic_in = 0;
    for (const auto& f : flows) {
      const bool network = cluster().node_of(f.src) != cluster().node_of(f.dst);
      nic_out += network && f.src == gpu;
      nic_in += network && f.dst == gpu;
      if (network) {
        EXPECT_EQ(f.src % 8, f.dst % 8) << "same rail";
      }
    }
    EXPECT_EQ(nic_out, 1) << gpu;
    EXPECT_EQ(nic_in, 1) << gpu;
  }
  const double s = 1e9, share = 1.75 / 4;
  const GroupCollectives g(cluster(), m);
  EXPECT_NEAR(g.seconds(CollectiveKind::kAllReduce, Algorithm::kRailRings, s, 1),
              std::max(14 * kNvlLat + 3 * share * s / kNvl, 14 * kNicLat + share * s / kNic),
              1e-15);
  // Four times faster on the network than one ring through one NIC per GPU would be.
  EXPECT_NEAR(
      14 * kNicLat + 1.75 * s / kNic,
      4 * g.seconds(CollectiveKind::kAllReduce, Algorithm::kRailRings, s, 1) - 3 * 14 * kNicLat,
      1e-12);
}

// One GPU on each of 64 nodes: the tree's 2 log2(64) network hops beat the ring's 126 steps for
// small buffers; its bandwidth, 0.45 of the bus bandwidth, loses for large ones (NCCL's model).
TEST(Collective, TreeForSmallAllReducesAcrossNodes) {
  const GroupCollectives g(cluster(), range(0, 64, 8));
  const double small = 4096, large = 1e9;
  EXPECT_NEAR(g.seconds(CollectiveKind::kAllReduce, Algorithm::kTree, small, 1),
              2 * 6 * kNicLat + std::round(2 / 0.9 * small) / kNic, 1e-15);
  EXPECT_NEAR(g.seconds(CollectiveKind::kAllReduce, Algorithm::kRing, small, 1),
              126 * kNicLat + 2 * 63.0 / 64 * small / kNic, 1e-15);
  EXPECT_EQ(g.choose(CollectiveKind::kAllReduce, small, 1).algorithm, Algorithm::kTree);
  EXPECT_EQ(g.choose(CollectiveKind::kAllReduce, large, 1).algorithm, Algorithm::kRing);
  // Only all-reduce has a tree.
  EXPECT_EQ(g.choose(CollectiveKind::kAllGather, small, 1).algorithm, Algorithm::kRing);
}

TEST(Collective, UnevenGroupsRunOneRing) {
  Members m = range(0, 4);
  m.push_back(8);
  EXPECT_TRUE(members_by_node(cluster(), m).empty());
  EXPECT_EQ(ring_algorithm(cluster(), m), Algorithm::kRing);
  EXPECT_EQ(algorithms(cluster(), m, CollectiveKind::kAllReduce).size(), 1u);
}

// nccl-tests all_reduce_perf on one DGX H100 (8 GPUs, NVSwitch), out of place, against the model
// on h100-sxm-ndr (one ring, 14 steps of 0.928 us, 396 GB/s links). Up to 32 MiB the model is
// fast, by up to 48 % (NCCL's LL/LL128/Simple protocols and its chunked pipeline are not
// modelled: one bandwidth serves every size); from 64 MiB to 256 MiB it is within 8 %; beyond,
// NCCL's NVLink SHARP (in-switch reduction, 480 GB/s of bus bandwidth) outruns a ring and the
// model is slow by up to 22 %. These bands pin the model's present fidelity; calibrating it per
// size is the accuracy work's.
// Translates of a group (whole leaf units along, or along the rails inside their nodes) share a
// canonical shape; others do not. With 8 GPUs per node and 64 nodes per leaf a unit is 512 GPUs.
TEST(GroupShape, TranslatesShareTheirCanonicalShape) {
  const auto& t = cluster();
  EXPECT_EQ(canonical_shape(t, {9, 17, 25}), (Members{8, 16, 24}));    // rail 1 -> rail 0
  EXPECT_EQ(canonical_shape(t, {513, 521}), (Members{0, 8}));          // a unit along, rail 1
  EXPECT_EQ(canonical_shape(t, {6, 7, 8, 9}), (Members{6, 7, 8, 9}));  // crosses a node: stays
  EXPECT_EQ(canonical_shape(t, {5, 4, 3}), (Members{2, 1, 0}));        // order kept
  EXPECT_NE(canonical_shape(t, {504, 512}), canonical_shape(t, {496, 504}));  // a leaf boundary
}

// Sharing prices never changes one: every translate of a group priced on its own equals the
// group's price, and translates with one canonical shape are priced once.
TEST(GroupShape, SharedPricesEqualPricesOfTheirOwn) {
  const auto& t = cluster();
  const std::vector<Members> groups = {range(0, 8), range(0, 16, 8), range(2, 4, 2),
                                       range(0, 64, 8), range(3, 24, 2)};
  for (const auto& base : groups) {
    CollectiveShapes shared;
    for (std::int32_t offset : {0, 1, 4, 8, 24, 256, 504, 512, 1024, 1537}) {
      Members g = base;
      for (auto& m : g) m += offset;
      if (g.back() >= t.num_gpus()) continue;
      const GroupCollectives own(t, g), from_shared(t, g, shared);
      for (const auto kind :
           {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kAllToAll}) {
        for (const double bytes : {1e4, 1e6, 1e9}) {
          const auto a = own.choose(kind, bytes, 2), b = from_shared.choose(kind, bytes, 2);
          EXPECT_EQ(a.algorithm, b.algorithm) << offset;
          EXPECT_DOUBLE_EQ(a.seconds, b.seconds) << offset;
        }
      }
    }
    EXPECT_LT(shared.size(), 10u);
  }
  // The eight rails' DP groups of 64 nodes, and the same a leaf unit on: one shape.
  CollectiveShapes rails;
  for (std::int32_t r = 0; r < 8; ++r) {
    (void)rails.of(t, range(r, 64, 8));
    (void)rails.of(t, range(512 + r, 64, 8));
  }
  EXPECT_EQ(rails.size(), 1u);
}

TEST(Collective, NcclTestsOnOneDgxH100) {
  const Platform p = test::catalog_platform("h100-sxm-ndr");
  const Topology topo(p, 8);
  const GroupCollectives g(topo, range(0, 8));
  const auto rows = nlohmann::json::parse(test::read_file(
      test::source_dir() + "/tests/validation/refdata/nccl_tests_h100_single_node_allreduce.json"));
  int checked = 0;
  for (const auto& row : rows["rows"]) {
    const double bytes = row["size_bytes"].get<double>();
    const double measured = row["oop_time_us"].get<double>() * 1e-6;
    if (bytes == 32 || bytes == 4096)
      continue;  // outliers of the out-of-place run (in place:
                 // 13.5 and 16.5 us)
    const double predicted = g.choose(CollectiveKind::kAllReduce, bytes, 1).seconds;
    const double error = predicted / measured - 1;
    SCOPED_TRACE(std::to_string(bytes) + " B: predicted " + std::to_string(predicted * 1e6) +
                 " us, measured " + std::to_string(measured * 1e6) + " us");
    if (bytes <= 32 << 20) {
      EXPECT_LT(error, 0.0);
      EXPECT_GT(error, -0.48);
    } else if (bytes <= 256 << 20) {
      EXPECT_LT(std::abs(error), 0.08);
    } else {
      EXPECT_GT(error, 0.0);
      EXPECT_LT(error, 0.22);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 30);
}

}  // namespace
}  // namespace trainsim
