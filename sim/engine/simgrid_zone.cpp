#include "sim/engine/simgrid_zone.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>

namespace trainsim {

ClusterZone::ClusterZone(const Topology& topology)
    : simgrid::kernel::routing::NetZoneImpl("cluster"), topology_(topology) {
  for (std::int64_t g = 0; g < topology.num_gpus(); ++g) {
    auto* h = create_host("gpu" + std::to_string(g), {1.0});
    h->seal();
    const auto id = h->get_netpoint()->id();
    if (gpu_of_netpoint_.size() <= id) gpu_of_netpoint_.resize(id + 1, -1);
    gpu_of_netpoint_[id] = g;
    hosts_.push_back(h);
  }
  for (const auto& info : topology.links()) {
    auto* link = create_link(link_name(info), {info.bandwidth});
    link->set_latency(info.latency);
    link->seal();
    links_.push_back(link->get_impl());
  }
  seal();
}

void ClusterZone::get_local_route(const simgrid::kernel::routing::NetPoint* src,
                                  const simgrid::kernel::routing::NetPoint* dst,
                                  simgrid::kernel::routing::Route* into, double* latency) {
  scratch_.clear();
  topology_.route(gpu_of_netpoint_[src->id()], gpu_of_netpoint_[dst->id()], scratch_);
  for (auto l : scratch_) {
    into->link_list_.push_back(links_[static_cast<std::size_t>(l)]);
    if (latency != nullptr) *latency += topology_.links()[static_cast<std::size_t>(l)].latency;
  }
}

}  // namespace trainsim
