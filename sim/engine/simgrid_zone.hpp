#pragma once
// SimGrid platform for a Topology: one host per GPU and a custom zone whose routes are the
// topology's (one NIC per GPU, non-blocking NVSwitch). SimGrid's hierarchical zones would send
// all of a node's inter-node traffic through one gateway link, so routes are computed here in
// O(1) from the host numbers instead.
#include <cstdint>
#include <vector>

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include "sim/platform/topology.hpp"

namespace trainsim {

class ClusterZone : public simgrid::kernel::routing::NetZoneImpl {
 public:
  explicit ClusterZone(const Topology& topology);
  ~ClusterZone() override = default;

  simgrid::s4u::Host* host(std::int64_t gpu) const { return hosts_[static_cast<std::size_t>(gpu)]; }

  void get_local_route(const simgrid::kernel::routing::NetPoint* src,
                       const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

 private:
  const Topology& topology_;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> links_;
  std::vector<std::int64_t> gpu_of_netpoint_;
  std::vector<std::int32_t> scratch_;
};

}  // namespace trainsim
