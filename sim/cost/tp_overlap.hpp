#pragma once
// What a TP collective beside its GEMM costs the pass: the time the GEMM's stream waits for it,
// beyond the GEMM's own time. Each method is a two-stage pipeline of chunks (a flow shop), with
// g the GEMM's time per chunk and c the transfer's:
//   bulk           independent of the GEMM: max(0, C - G)
//   ring exchange  tp chunks; chunk 0 is local, the others arrive one per ring step:
//                  g + (tp - 1) max(g, c) - G, c = C / (tp - 1)
//   pipelined      kPipelinedSplits chunks, each reduce-scattered after its GEMM:
//                  g + c + (k - 1) max(g, c) - G, c = C / k
// Transformer Engine's userbuffers defaults (module/base.py, initialize_ub): ring exchange for
// qkv_fprop, fc1_fprop, proj_dgrad and fc2_dgrad; pipelined with 4 splits for proj_fprop and
// fc2_fprop; bulk for the backward's re-gather and reduce-scatter.
#include <cstdint>

#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// Transformer Engine's default num_splits for the pipelined method.
inline constexpr std::int64_t kPipelinedSplits = 4;

/// Seconds the pass waits for one call of `comm_s` beside a GEMM of `gemm_s` on `tp` GPUs.
double overlap_stall(OverlapMethod method, double gemm_s, double comm_s, std::int64_t tp);

}  // namespace trainsim
