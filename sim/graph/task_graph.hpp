#pragma once
// The contract between planning and simulation: per rank, a program of operations on streams.
// Ops of one stream run one after the other in program order (like a CUDA stream); ops of
// different streams run concurrently, ordered only by explicit dependencies on earlier ops of
// the same rank (like CUDA events). Compute ops carry a duration; point-to-point batches post
// their sends and receives together and wait for all of them (NCCL batch_isend_irecv semantics,
// rendezvous with the peer); collectives synchronise their group and move their bytes as NCCL's
// algorithms do (sim/collective/).
// No SimGrid here: the graph is plain data, serialisable and testable.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/collective/kinds.hpp"
#include "sim/plan/dims.hpp"

namespace trainsim {

/// Which parallelism a communication serves; exposed communication is reported per kind.
enum class CommKind : std::uint8_t { kTP, kPP, kDP, kCP, kEP };
inline constexpr std::size_t kNumCommKinds = 5;
const char* to_string(CommKind kind);
/// The kind of traffic a collective along d is (expert data parallelism, the stage-wide group and
/// the embedding group count as data-parallel).
CommKind comm_kind(Dim d);

/// What a compute op does, for reports and traces. A backward is either whole, or split into
/// its input-gradient part (B) and its weight-gradient part (W) by zero-bubble schedules. A wait
/// holds the compute stream after a pass's kernels for the calls beside them that outlast them
/// (the op's `comm` names their kind): it takes the stream like compute, but its time is
/// exposed communication, not compute.
enum class ComputeKind : std::uint8_t {
  kForward,
  kBackward,
  kBackwardInput,
  kBackwardWeight,
  kRecompute,
  kOptimizer,
  kOther,
  kWait
};
const char* to_string(ComputeKind kind);
/// The short name the pipeline diagram and the trace give a pass: F, B, B-input, W, R, optimizer,
/// other (a wait or other compute). Also a CSS class of the diagram's boxes.
const char* pass_label(ComputeKind kind);

/// The streams of a GPU. Without overlap everything runs on the compute stream.
enum class Stream : std::uint8_t {
  kCompute,
  kTP,              // tensor-parallel collectives overlapped with compute
  kDP,              // data-parallel gradient reductions and parameter gathers
  kSendActivation,  // pipeline exchanges overlapped with compute, one FIFO per direction
  kSendGradient,
  kRecvActivation,
  kRecvGradient,
  kCP,  // context-parallel ring exchanges beside the attention
  kEP   // expert all-to-alls beside the MoE layer's compute (--overlap-moe-expert-parallel-comm)
};
inline constexpr std::size_t kNumStreams = 9;
const char* to_string(Stream stream);

enum class OpType : std::uint8_t { kCompute, kP2P, kCollective };

/// One message of a point-to-point batch. A send on (src, dst, channel) matches the receive on
/// the same triple, first posted to first posted.
struct Transfer {
  std::int32_t peer = 0;
  std::int32_t channel = 0;  // 0: activations, 1: gradients
  double bytes = 0;
};

struct Op {
  OpType type = OpType::kCompute;
  ComputeKind compute = ComputeKind::kOther;
  CommKind comm = CommKind::kTP;
  CollectiveKind collective = CollectiveKind::kAllReduce;
  std::int32_t microbatch = -1;
  std::int32_t group = -1;  // collective: index into TaskGraph::groups
  std::int32_t count = 1;   // collective: calls merged into this op (each pays the latency)
  double seconds = 0;       // compute
  double bytes = 0;         // collective: buffer size per member, summed over the calls
  std::uint32_t first_transfer = 0;  // p2p: sends, then receives, in RankProgram::transfers
  std::uint16_t num_sends = 0;
  std::uint16_t num_recvs = 0;
  Stream stream = Stream::kCompute;
  std::int16_t chunk = 0;       // compute: the model chunk (virtual stage) it runs
  std::uint32_t first_dep = 0;  // ops of this rank that must finish first, in RankProgram::deps
  std::uint16_t num_deps = 0;
};

struct RankProgram {
  std::int32_t stage = 0;
  std::int32_t gpu = -1;  // the GPU it runs on (the topology's number); -1: its own index
  std::vector<Op> ops;
  std::vector<Transfer> transfers;
  std::vector<std::uint32_t> deps;  // op indices, each lower than the op that waits on it
};

struct Group {
  Dim dim = Dim::kTP;                 // the dimension whose group this is
  std::vector<std::int32_t> members;  // GPUs, ring order: the collective is priced over them all
  /// The graph's ranks that replay the collective; empty: the members themselves (a full graph,
  /// where rank r runs on GPU r). A symmetric graph replays one member per class, which stands
  /// for the others (see ranks_of()).
  std::vector<std::int32_t> ranks;
  CommKind kind() const { return comm_kind(dim); }  // the traffic it carries
};

/// A full graph has a program per GPU; a symmetric one a program per class of GPUs that run the
/// same ops over the same kinds of links (one per pipeline stage), each standing for its class.
struct TaskGraph {
  std::vector<RankProgram> ranks;
  std::vector<Group> groups;
  /// GPUs the graph stands for, and per GPU the rank that replays it; both empty in a full graph.
  std::int64_t gpus = 0;
  std::vector<std::int32_t> replayed_by;

  std::int64_t num_ranks() const { return static_cast<std::int64_t>(ranks.size()); }
  std::int64_t num_gpus() const { return gpus > 0 ? gpus : num_ranks(); }
  bool symmetric() const { return !replayed_by.empty(); }
  std::int64_t gpu_of(std::int64_t rank) const {
    const auto g = ranks[static_cast<std::size_t>(rank)].gpu;
    return g >= 0 ? g : rank;
  }
  /// The ranks that replay a group's collective.
  const std::vector<std::int32_t>& ranks_of(const Group& group) const {
    return group.ranks.empty() ? group.members : group.ranks;
  }
  std::size_t num_ops() const;
};

}  // namespace trainsim
