#pragma once
// SimGrid platform for a Topology: one host per GPU and a custom zone whose routes are the
// topology's (one NIC per GPU, non-blocking NVSwitch). SimGrid's hierarchical zones would send
// all of a node's inter-node traffic through one gateway link, so routes are computed here in
// O(1) from the host numbers instead.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include "sim/engine/collective_replay.hpp"
#include "sim/platform/topology.hpp"

namespace trainsim {

class ClusterZone : public simgrid::kernel::routing::NetZoneImpl {
 public:
  /// A host per GPU in `gpus` and one per fold (a transfer from the fold's owner to fold host k
  /// takes folds[k]'s folded route); the links of the routes between the hosts of `routes`
  /// (GPU pairs) and of the folds, and no others: a symmetric replay of 16,384 GPUs needs a few
  /// dozen.
  ClusterZone(const Topology& topology, const std::vector<std::int64_t>& gpus,
              const std::vector<std::pair<std::int64_t, std::int64_t>>& routes,
              std::vector<Fold> folds);
  ~ClusterZone() override = default;

  simgrid::s4u::Host* host(std::int64_t gpu) const { return hosts_[static_cast<std::size_t>(gpu)]; }
  simgrid::s4u::Host* fold_host(std::size_t fold) const { return fold_hosts_[fold]; }

  void get_local_route(const simgrid::kernel::routing::NetPoint* src,
                       const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

 private:
  const Topology& topology_;
  std::vector<Fold> folds_;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<simgrid::s4u::Host*> fold_hosts_;
  std::vector<std::int64_t> fold_of_netpoint_;  // -1: a GPU's host
  // The links the routes use, by topology link number.
  std::unordered_map<std::int32_t, simgrid::kernel::resource::StandardLinkImpl*> links_;
  std::vector<std::int64_t> gpu_of_netpoint_;
  std::vector<std::int32_t> scratch_;
};

}  // namespace trainsim
