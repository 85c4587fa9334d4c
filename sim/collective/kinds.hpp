#pragma once
// The collectives trainsim replays, the algorithms NCCL runs them with, and what a ring moves:
// the vocabulary both engines, the task graph and the reports share.
#include <cstddef>
#include <cstdint>

namespace trainsim {

enum class CollectiveKind : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kSendRecv
};
inline constexpr std::size_t kNumCollectiveKinds = 6;
const char* to_string(CollectiveKind kind);

/// How a collective moves its bytes:
/// - kRing: one ring over the members in the group's order;
/// - kRailRings: one ring per GPU a node holds of the group, each carrying 1/k of the buffer and
///   leaving every node through a different NIC (NCCL's channels on a rail-optimised fabric);
/// - kTree: NCCL's double binary tree across nodes with a chain inside each node (all-reduce);
/// - kDirect: every member sends straight to its peers (all-to-all, send/recv).
enum class Algorithm : std::uint8_t { kRing, kRailRings, kTree, kDirect };
inline constexpr std::size_t kNumAlgorithms = 4;
const char* to_string(Algorithm algorithm);

/// What each ring member sends its successor for S bytes over n members, and the latency steps
/// it pays: all-reduce 2(n-1)/n S in 2(n-1) steps; all-gather and reduce-scatter (n-1)/n S in
/// n-1 (S is the gathered buffer); broadcast S in n-1 (pipelined along the chain).
double ring_bytes(CollectiveKind kind, double bytes, std::int64_t members);
std::int64_t ring_steps(CollectiveKind kind, std::int64_t members);

/// nccl-tests' bus-bandwidth factor (its doc/PERFORMANCE.md): bus bandwidth = S / t x factor,
/// 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 otherwise.
/// Equal across collectives and group sizes when the links run at the same speed.
double bus_factor(CollectiveKind kind, std::int64_t members);

/// Whole bytes of a transfer, as the network simulates them.
double whole_bytes(double bytes);

}  // namespace trainsim
