#pragma once
// Pipeline schedules as per-stage programs: the order of forward and backward passes and of the
// point-to-point exchanges between them, exactly as the framework issues them. Pure data.
#include <cstdint>
#include <vector>

namespace trainsim {

enum class PipelineSchedule { kGPipe, k1F1B, kInterleaved, kZBH1 };

/// kBackward is a whole backward; zero-bubble schedules split it into the input gradient
/// (kBackwardInput, on the critical path) and the weight gradient (kBackwardWeight, deferrable).
enum class Pass { kForward, kBackward, kBackwardInput, kBackwardWeight };

/// Activations flow to the next stage, gradients to the previous one.
enum class Flow { kActivation, kGradient };

/// One message of an exchange. `chunk` is the local model chunk that produced it (a send) or
/// will consume it (a receive); with interleaving the next stage of the last physical stage is
/// the first one (a ring), without it the chunk is always 0.
struct Exchange {
  Flow flow;
  std::int64_t microbatch;
  std::int64_t chunk = 0;
};

struct ScheduleStep {
  enum class Kind { kCompute, kComm } kind;
  Pass pass = Pass::kForward;   // kCompute
  std::int64_t microbatch = 0;  // kCompute
  std::int64_t chunk = 0;       // kCompute
  std::vector<Exchange> sends;  // kComm: posted together, then all waited for
  std::vector<Exchange> recvs;
};

struct ScheduleConfig {
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  std::int64_t stages = 1;
  std::int64_t microbatches = 1;
  std::int64_t chunks = 1;      // virtual stages per physical stage (interleaved)
  std::int64_t group_size = 0;  // interleaved: micro-batches per chunk group; 0 = stages
};

/// The program of `stage` (0-based). Exchanges a stage has no peer for are left out.
///  - GPipe: all forwards (recv, compute, send), then all backwards in the same order.
///  - 1F1B: Megatron-LM's forward_backward_pipelining_without_interleaving: min(p - s - 1, m)
///    warm-up forwards, then one forward and one backward per step with the combined
///    send_forward_recv_backward / send_backward_recv_forward exchanges, then the cool-down.
///  - Interleaved: Megatron-LM's forward_backward_pipelining_with_interleaving (batched p2p):
///    its schedule table of micro-batch groups per chunk, (p - s - 1) * 2 + (v - 1) * group
///    warm-up forwards, steady forward+backward with one exchange, cool-down backwards.
///  - ZB-H1: Qi et al.'s zero-bubble H1 in its DeepSpeed-pipe form: p - s - 1 warm-up forwards,
///    s forward / input-gradient steps that defer their weight gradients, then forward /
///    input-gradient / weight-gradient steps, and the deferred weight gradients at the end
///    (the first stage runs whole backwards).
std::vector<ScheduleStep> stage_program(const ScheduleConfig& config, std::int64_t stage);

/// Warm-up forwards of a stage under 1F1B: min(p - s - 1, m).
std::int64_t warmup_microbatches(std::int64_t stage, std::int64_t stages,
                                 std::int64_t microbatches);

/// Megatron-LM's interleaving table: for each virtual micro-batch, the (micro-batch, chunk) it
/// runs in forward order.
struct TableEntry {
  std::int64_t microbatch;
  std::int64_t chunk;
};
std::vector<TableEntry> interleaved_schedule_table(std::int64_t microbatches, std::int64_t chunks,
                                                   std::int64_t group_size);

/// Empty when Megatron-LM accepts the interleaved configuration, else its reason (group size
/// outside [p, m], or a final group smaller than p).
const char* interleaving_problem(const ScheduleConfig& config);

}  // namespace trainsim
