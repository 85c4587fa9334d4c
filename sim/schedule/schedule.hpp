#pragma once
// Pipeline schedules as per-stage programs: the order of forward and backward passes and of the
// point-to-point exchanges between them, exactly as the framework issues them. Pure data.
#include <cstdint>
#include <vector>

namespace trainsim {

enum class PipelineSchedule { kGPipe, k1F1B };

enum class Pass { kForward, kBackward };

/// Activations flow to the next stage, gradients to the previous one.
enum class Flow { kActivation, kGradient };

struct Exchange {
  Flow flow;
  std::int64_t microbatch;
};

struct ScheduleStep {
  enum class Kind { kCompute, kComm } kind;
  Pass pass = Pass::kForward;   // kCompute
  std::int64_t microbatch = 0;  // kCompute
  std::vector<Exchange> sends;  // kComm: posted together, then all waited for
  std::vector<Exchange> recvs;
};

/// The program of `stage` (0-based) of `stages` for `microbatches` micro-batches. Exchanges that
/// a first or last stage would not make (no previous / next stage) are left out.
///  - GPipe: all forwards (recv, compute, send), then all backwards in the same order.
///  - 1F1B: Megatron-LM's forward_backward_pipelining_without_interleaving: min(p - s - 1, m)
///    warm-up forwards, then one forward and one backward per step with the combined
///    send_forward_recv_backward / send_backward_recv_forward exchanges, then the cool-down.
std::vector<ScheduleStep> stage_program(PipelineSchedule schedule, std::int64_t stage,
                                        std::int64_t stages, std::int64_t microbatches);

/// Warm-up forwards of a stage under 1F1B: min(p - s - 1, m).
std::int64_t warmup_microbatches(std::int64_t stage, std::int64_t stages,
                                 std::int64_t microbatches);

}  // namespace trainsim
