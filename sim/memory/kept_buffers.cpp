#include "sim/memory/kept_buffers.hpp"

#include <algorithm>

#include "sim/memory/memory.hpp"

namespace trainsim {

namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}

}  // namespace

// Transformer Engine's cuBLAS workspaces beyond the one every GEMM shares, each taken at its
// first use and kept: the grouped GEMM of grouped experts runs on 4 compute streams with a
// workspace each (transformer_engine/common/util/multi_stream.cpp); TP-overlapped GEMMs use one
// of 3 workspaces' size (_NUM_MAX_UB_STREAMS in transformer_engine/pytorch/cpp_extensions/gemm.py).
double extra_cublas_workspaces(const Platform& platform, const Plan& plan, bool has_experts) {
  constexpr double kGroupedGemmStreams = 4;
  constexpr double kUserbufferStreams = 3;
  double workspaces = 0;
  if (has_experts && plan.moe_grouped_gemm) workspaces += kGroupedGemmStreams;
  if (plan.tp_comm_overlap) workspaces += kUserbufferStreams;
  return workspaces * platform.memory.cublas_workspace;
}

// Megatron-Core's global memory buffer (GlobalMemoryBuffer.get_tensor, megatron/core/utils.py):
// each named buffer is allocated at its first request, grown to the largest, and kept. "mpu"
// holds the output layer's all-gathered input under sequence parallelism (Megatron's own
// ColumnParallelLinear, forward and backward) and the all-gather token dispatcher's tokens
// gathered over expert TP x EP (one buffer for both: the larger); "mpu_0" and "mpu_1" hold the
// flush's gathered inputs of the deferred LM-head weight gradients, the second from the second
// deferred micro-batch on (drain_embedding_wgrad_compute). Other frameworks keep no such buffers.
double megatron_global_buffers(const Model& model, const Plan& plan, bool lm_head,
                               bool moe_layers) {
  if (plan.effective_framework() != Framework::kMegatron) return 0;
  // One micro-batch's tokens on the GPU (1/cp of each sequence) times the hidden size, in BF16.
  const double tokens = d(plan.mbs) * d(plan.seq_len) / d(plan.cp);
  const double gathered_input = kActBytes * tokens * d(model.hidden_size);  // T x h
  const bool lm_head_gathers = lm_head && plan.sequence_parallel();
  double mpu = lm_head_gathers ? gathered_input : 0.0;
  const std::int64_t dispatch_group = plan.expert_tp() * plan.ep;
  if (moe_layers && plan.moe_dispatcher == MoeDispatcher::kAllGather && dispatch_group > 1) {
    mpu = std::max(mpu, gathered_input / d(plan.sp ? plan.tp : 1) * d(dispatch_group));
  }
  const auto flush =
      lm_head_gathers ? std::min<std::int64_t>(plan.deferred_lm_head_wgrads(), 2) : 0;
  return mpu + d(flush) * gathered_input;
}

}  // namespace trainsim
