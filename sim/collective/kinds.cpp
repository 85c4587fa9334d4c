#include "sim/collective/kinds.hpp"

#include <cmath>

namespace trainsim {

const char* to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kSendRecv:
      return "send_recv";
  }
  return "?";
}

const char* to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kRailRings:
      return "rail rings";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kDirect:
      return "direct";
  }
  return "?";
}

double ring_bytes(CollectiveKind kind, double bytes, std::int64_t members) {
  const double n = static_cast<double>(members);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * (n - 1.0) / n * bytes;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return (n - 1.0) / n * bytes;
    default:
      return bytes;
  }
}

std::int64_t ring_steps(CollectiveKind kind, std::int64_t members) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * (members - 1);
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kBroadcast:
      return members - 1;
    default:
      return 1;
  }
}

double bus_factor(CollectiveKind kind, std::int64_t members) {
  const double n = static_cast<double>(members);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * (n - 1.0) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return (n - 1.0) / n;
    default:
      return 1.0;
  }
}

double whole_bytes(double bytes) {
  return std::round(bytes);
}

}  // namespace trainsim
