#include "sim/platform/topology.hpp"

#include <gtest/gtest.h>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

std::vector<std::string> route_names(const Topology& t, int src, int dst) {
  std::vector<std::int32_t> r;
  t.route(src, dst, r);
  std::vector<std::string> names;
  for (auto l : r) names.push_back(link_name(t.link(l)));
  return names;
}

TEST(Topology, RoutesOneNicPerGpuOnRails) {
  // 4 nodes per leaf: 16 nodes make 4 scalable units, so 8 rails x 4 units = 32 leaves.
  const Topology t(test::simple_platform(400, 0.5, 50, 2.0, 4, 2.0), 128);
  EXPECT_EQ(t.num_nodes(), 16);
  EXPECT_EQ(t.num_leaves(), 32);
  EXPECT_EQ(route_names(t, 1, 5), (std::vector<std::string>{"nvlink_up_1", "nvlink_down_5"}));
  // Same rail, same unit: NIC to NIC through the rail's leaf.
  EXPECT_EQ(route_names(t, 3, 27), (std::vector<std::string>{"nic_up_3", "nic_down_27"}));
  // Same rail, other unit: up to the spine and down again. Rail 3 of unit 0 is leaf 12.
  EXPECT_EQ(route_names(t, 3, 35),
            (std::vector<std::string>{"nic_up_3", "leaf_up_12", "leaf_down_13", "nic_down_35"}));
  // Other rail (GPU 12 is rail 4 of node 1: leaf 4 x 4 + 0): through the spine as well.
  EXPECT_EQ(route_names(t, 3, 12),
            (std::vector<std::string>{"nic_up_3", "leaf_up_12", "leaf_down_16", "nic_down_12"}));
  EXPECT_DOUBLE_EQ(t.route_latency(1, 5), 1e-6);
  EXPECT_DOUBLE_EQ(t.route_latency(3, 27), 4e-6);
  EXPECT_DOUBLE_EQ(t.route_bandwidth(1, 5), 400e9);
  // A leaf's spine side carries its 4 NICs at 2:1 oversubscription.
  EXPECT_DOUBLE_EQ(t.link(4 * 128).bandwidth, 4 * 50e9 / 2.0);
  EXPECT_DOUBLE_EQ(t.route_bandwidth(3, 35), 50e9);
}

// A route moved onto another GPU's links keeps its leaf links, kinds and latency: how a GPU
// replays the transfers of the GPUs of its class (symmetric simulation).
TEST(Topology, FoldedRoutesUseTheOwnersLinks) {
  const Topology t(test::simple_platform(400, 0.5, 50, 2.0, 4, 2.0), 128);
  auto folded = [&](int owner, int src, int dst) {
    std::vector<std::int32_t> r;
    t.folded_route(owner, src, dst, r);
    std::vector<std::string> names;
    for (auto l : r) names.push_back(link_name(t.link(l)));
    return names;
  };
  EXPECT_EQ(folded(0, 1, 5), (std::vector<std::string>{"nvlink_up_0", "nvlink_down_0"}));
  EXPECT_EQ(folded(3, 27, 59),
            (std::vector<std::string>{"nic_up_3", "leaf_up_12", "leaf_down_13", "nic_down_3"}));
  EXPECT_EQ(t.route_class(1, 5), RouteClass::kNode);
  EXPECT_EQ(t.route_class(3, 27), RouteClass::kLeaf);
  EXPECT_EQ(t.route_class(3, 35), RouteClass::kSpine);
  // Leaves bind only when oversubscribed and there are several of them per rail.
  EXPECT_TRUE(t.leaves_can_bind());
  EXPECT_FALSE(Topology(test::simple_platform(400, 0.5, 50, 2.0, 4, 1.0), 128).leaves_can_bind());
  EXPECT_FALSE(Topology(test::simple_platform(400, 0.5, 50, 2.0, 4, 2.0), 32).leaves_can_bind());
}

}  // namespace
}  // namespace trainsim
