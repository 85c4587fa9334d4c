#include "sim/engine/simgrid_zone.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>

#include <algorithm>

namespace trainsim {

ClusterZone::ClusterZone(const Topology& topology, const std::vector<std::int64_t>& gpus,
                         const std::vector<std::pair<std::int64_t, std::int64_t>>& routes,
                         std::vector<Fold> folds)
    : simgrid::kernel::routing::NetZoneImpl("cluster"),
      topology_(topology),
      folds_(std::move(folds)) {
  auto add_host = [&](const std::string& name, std::int64_t gpu, std::int64_t fold) {
    auto* h = create_host(name, {1.0});
    h->seal();
    const auto id = h->get_netpoint()->id();
    if (gpu_of_netpoint_.size() <= id) {
      gpu_of_netpoint_.resize(id + 1, -1);
      fold_of_netpoint_.resize(id + 1, -1);
    }
    gpu_of_netpoint_[id] = gpu;
    fold_of_netpoint_[id] = fold;
    return h;
  };
  hosts_.assign(static_cast<std::size_t>(topology.num_gpus()), nullptr);
  for (auto g : gpus)
    hosts_[static_cast<std::size_t>(g)] = add_host("gpu" + std::to_string(g), g, -1);
  for (std::size_t k = 0; k < folds_.size(); ++k) {
    fold_hosts_.push_back(
        add_host("fold" + std::to_string(k), folds_[k].owner, static_cast<std::int64_t>(k)));
  }
  // The links the routes use, each created once.
  std::vector<std::int32_t> used;
  for (const auto& [src, dst] : routes) topology.route(src, dst, used);
  for (const auto& f : folds_) topology.folded_route(f.owner, f.src, f.dst, used);
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  for (auto l : used) {
    const auto info = topology.link(l);
    auto* link = create_link(link_name(info), {info.bandwidth});
    link->set_latency(info.latency);
    link->seal();
    links_.emplace(l, link->get_impl());
  }
  seal();
}

void ClusterZone::get_local_route(const simgrid::kernel::routing::NetPoint* src,
                                  const simgrid::kernel::routing::NetPoint* dst,
                                  simgrid::kernel::routing::Route* into, double* latency) {
  scratch_.clear();
  const auto fold = fold_of_netpoint_[dst->id()];
  if (fold >= 0) {
    const Fold& f = folds_[static_cast<std::size_t>(fold)];
    topology_.folded_route(f.owner, f.src, f.dst, scratch_);
  } else {
    topology_.route(gpu_of_netpoint_[src->id()], gpu_of_netpoint_[dst->id()], scratch_);
  }
  for (auto l : scratch_) {
    into->link_list_.push_back(links_.at(l));
    if (latency != nullptr) *latency += topology_.link(l).latency;
  }
}

}  // namespace trainsim
