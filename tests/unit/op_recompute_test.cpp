// torchtitan's per-operator checkpointing (--recompute op, its selective_ac_option "op"): each
// decoder layer keeps the attention's output and the outputs of the first, third, fifth and
// seventh matmuls (wq, wv, w1, w2 of a Llama layer), and runs the rest of its forward again before
// its backward: wk, wo and w3, the element-wise kernels, the sequence-parallel all-gathers.
#include <gtest/gtest.h>

#include <string>

#include "sim/cost/layer_ops.hpp"
#include "sim/cost/recompute_ops.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/memory/memory.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan op_plan(std::int64_t tp, std::int64_t mbs = 2) {
  Plan p;
  p.tp = tp;
  p.sp = tp > 1;
  p.dp = 8 / tp;
  p.mbs = mbs;
  p.seq_len = 8192;
  p.recompute = Recompute::kOp;
  return p;
}

double gemm_flops(const BlockPass& pass, const std::string& name) {
  double flops = 0;
  for (const auto& k : pass.kernels) {
    if (k.kind == KernelKind::kGemm && k.name == name) flops += k.flops;
  }
  return flops;
}

// Llama 3.1 8B (h 4096, 32 heads of 128, 8 key/value heads, FFN 14336), 2 x 8192 tokens: per
// token, 2 bytes of each of the input (h), Q (4096), V (1024), the attention output (4096), w1's
// output (14336) and w2's (h), plus 4 bytes of softmax statistics per head.
TEST(OpRecompute, KeepsTheInputTheSavedMatmulsAndTheAttentionOutput) {
  const Model m = test::catalog_model("llama3.1-8b");
  const double T = 2.0 * 8192;
  const double per_token = 2.0 * (4096 + 4096 + 1024 + 4096 + 14336 + 4096) + 4.0 * 32;
  const LayerActivations one = layer_activations(m, op_plan(1), false);
  EXPECT_DOUBLE_EQ(one.saved, T * per_token);
  // TP 2 with SP: the input and the two reduce-scatters' outputs split by SP, Q, V, the attention
  // output, w1's output and the statistics by TP; w2's output (its partial sum) whole.
  const double split =
      2.0 * (4096 / 2.0 + (4096 + 1024 + 4096 + 14336) / 2.0 + 4096 + 2 * 4096 / 2.0) +
      4.0 * 32 / 2;
  EXPECT_DOUBLE_EQ(layer_activations(m, op_plan(2), false).saved, T * split);
  // Between full recomputation (the input alone) and none.
  Plan none = op_plan(1);
  none.recompute = Recompute::kNone;
  const LayerActivations all = layer_activations(m, none, false);
  EXPECT_GT(one.saved, T * 2.0 * 4096);
  EXPECT_LT(one.saved, all.saved);
  EXPECT_DOUBLE_EQ(one.recompute, all.saved - one.saved);
}

// The recomputed matmuls are wk (T x 4096 x 1024), wo (T x 4096 x 4096) and w3 (T x 4096 x
// 14336); no other GEMM, and not the attention; with SP both all-gathers of the norms' outputs.
TEST(OpRecompute, RerunsTheEvenMatmulsAndTheElementwiseKernels) {
  const Model m = test::catalog_model("llama3.1-8b");
  for (const std::int64_t tp : {1, 2}) {
    const Plan p = op_plan(tp);
    const LayerShape shape = layer_shape(m, p, 128256, false);
    const BlockPass fwd = block_passes(BlockKind::kDecoder, shape).forward;
    const BlockPass again = op_recompute(fwd, shape);
    const double T = 2.0 * 8192, t = static_cast<double>(tp);
    EXPECT_DOUBLE_EQ(gemm_flops(again, "k_proj"), 2 * T * 4096 * 1024 / t);
    EXPECT_DOUBLE_EQ(gemm_flops(again, "out_proj"), 2 * T * 4096 * 4096 / t);
    EXPECT_DOUBLE_EQ(gemm_flops(again, "mlp_up.w3"), 2 * T * 4096 * 14336 / t);
    double gemms = 0, elementwise = 0, forward_elementwise = 0;
    for (const auto& k : again.kernels) {
      EXPECT_FALSE(k.name.starts_with("attention")) << k.name;
      if (k.kind == KernelKind::kGemm) gemms += k.flops;
      if (k.kind == KernelKind::kElementwise) elementwise += k.bytes;
    }
    for (const auto& k : fwd.kernels) {
      if (k.kind == KernelKind::kElementwise) forward_elementwise += k.bytes;
    }
    EXPECT_DOUBLE_EQ(gemms, 2 * T * 4096 * (1024 + 4096 + 14336) / t);
    EXPECT_DOUBLE_EQ(elementwise, forward_elementwise);
    const CollectiveLoad gathers =
        collective_load(again.collectives, CollectiveKind::kAllGather, Dim::kTP);
    EXPECT_EQ(gathers.count, tp > 1 ? 2 : 0);
    EXPECT_DOUBLE_EQ(gathers.bytes, tp > 1 ? 2 * T * 4096 * 2 : 0.0);
    EXPECT_EQ(collective_load(again.collectives, CollectiveKind::kReduceScatter, Dim::kTP).count,
              0);
  }
}

// Context parallelism: the K/V all-gather runs again (the attention's backward reads what it
// gathered); the ring exchange does not (its backward runs its own ring).
TEST(OpRecompute, ContextParallelGatherAgainButNotTheRing) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p = op_plan(1);
  p.cp = 2;
  p.dp = 4;
  for (const CpComm comm : {CpComm::kAllGather, CpComm::kP2P}) {
    p.cp_comm = comm;
    const LayerShape shape = layer_shape(m, p, 128256, false);
    const BlockPass again = op_recompute(block_passes(BlockKind::kDecoder, shape).forward, shape);
    EXPECT_EQ(collective_load(again.collectives, CollectiveKind::kAllGather, Dim::kCP).count,
              comm == CpComm::kAllGather ? 1 : 0);
  }
}

// On the stage: the recompute pass is the layer's rerun times its layers, between selective
// (the attention core) and full (the whole forward).
TEST(OpRecompute, StageTimeLiesBetweenSelectiveAndFull) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto part = test::uniform_partition(m, 1);
  const auto seconds = [&](Recompute r) {
    Plan p = op_plan(1);
    p.recompute = r;
    return compute_costs(m, pf, p, part).stages[0].recompute.seconds;
  };
  const double op = seconds(Recompute::kOp);
  EXPECT_GT(op, 0.0);
  EXPECT_LT(op, seconds(Recompute::kFull));
  EXPECT_EQ(seconds(Recompute::kNone), 0.0);
}

TEST(OpRecompute, ModelledWithFusedAttentionAndGroupedExperts) {
  Plan p = op_plan(1);
  EXPECT_EQ(test::plan_error(p, test::catalog_model("llama3.1-8b")), "(valid)");
  EXPECT_EQ(test::plan_error(p, test::catalog_model("mixtral-8x7b")), "(valid)");
  Plan sequential = p;
  sequential.moe_grouped_gemm = false;
  EXPECT_EQ(test::plan_error(sequential, test::catalog_model("mixtral-8x7b")),
            "--recompute: op (torchtitan's per-operator checkpointing) is modelled with fused "
            "attention and grouped experts; not with --moe-grouped-gemm off (each expert's own "
            "matmuls would shift the count)");
  Plan lora = p;
  lora.lora_rank = 16;
  EXPECT_EQ(test::plan_error(lora, test::catalog_model("llama3.1-8b")),
            "--recompute: op (torchtitan's per-operator checkpointing) is modelled with fused "
            "attention and grouped experts; not under LoRA (the adapters' matmuls would shift the "
            "count)");
  p.attention_backend = AttentionBackend::kUnfused;
  EXPECT_EQ(test::plan_error(p, test::catalog_model("llama3.1-8b")),
            "--recompute: op (torchtitan's per-operator checkpointing) is modelled with fused "
            "attention and grouped experts; not with --attention-backend unfused: use flash or "
            "flash-attn2");
}

// An MoE layer counts on past the attention's matmuls: the router gate, then the shared
// expert's w1, w3, w2 (torchtitan's MoE runs the routed experts, grouped GEMMs outside the
// count, between them). Qwen3-30B-A3B (h 2048, 32 heads and 4 KV heads of 128, 128 experts of
// 768, top 8, no shared expert) with EP 8: wq 1, wk 2, wv 3, wo 4, the gate 5 kept. Per token:
// the input, Q, V, the attention output, the 128 router logits, the statistics, and the two
// all-to-alls' outputs, 8 copies of h each way.
TEST(OpRecompute, MoeLayerKeepsTheGateAndTheAllToAllsAndRerunsTheExperts) {
  const Model m = test::catalog_model("qwen3-30b-a3b");
  Plan p = op_plan(1);
  p.ep = 8;
  const double T = 2.0 * 8192;
  const double per_token = 2.0 * (2048 + 4096 + 512 + 4096 + 128) + 4.0 * 32 + 2.0 * 2048 * 8 * 2;
  EXPECT_DOUBLE_EQ(layer_activations(m, p, true).saved, T * per_token);
  const LayerShape shape = layer_shape(m, p, 151936, true);
  const BlockPass fwd = block_passes(BlockKind::kDecoder, shape).forward;
  const BlockPass again = op_recompute(fwd, shape);
  EXPECT_DOUBLE_EQ(gemm_flops(again, "router"), 0.0);
  EXPECT_DOUBLE_EQ(gemm_flops(again, "k_proj"), 2 * T * 2048 * 512);
  EXPECT_DOUBLE_EQ(gemm_flops(again, "out_proj"), 2 * T * 4096 * 2048);
  // Every routed expert GEMM as the forward ran it: T x 8 rows through 768 x 2 up, 768 down.
  EXPECT_DOUBLE_EQ(gemm_flops(again, "expert_up") + gemm_flops(again, "expert_down"),
                   gemm_flops(fwd, "expert_up") + gemm_flops(fwd, "expert_down"));
  EXPECT_DOUBLE_EQ(gemm_flops(fwd, "expert_up"), 2 * T * 8 * 2048 * 768 * 2);
  EXPECT_EQ(collective_load(again.collectives, CollectiveKind::kAllToAll, Dim::kEP).count, 0);
}

// MLA (DeepSeek-V3: q_lora 1536, kv_lora 512 + rope 64, 128 heads, v_head 128) counts five
// attention matmuls, wq_a 1, wq_b 2, wkv_a 3, wkv_b 4, wo 5: it keeps the two down-projections'
// outputs and wo's (whole on each TP rank). A dense layer's MLP then keeps w3 (7) only; an MoE
// layer's the shared expert's w1 (7) and w2 (9), the gate (6) and w3 (8) run again.
TEST(OpRecompute, MlaKeepsTheDownProjectionsAndTheOutput) {
  const Model m = test::catalog_model("deepseek-v3");
  Plan p = op_plan(1);
  p.ep = 8;
  p.mtp_num_layers = 0;
  const double T = 2.0 * 8192;
  const double attention = 2.0 * (7168 + 1536 + 576 + 7168 + 128 * 128) + 4.0 * 128;
  EXPECT_DOUBLE_EQ(layer_activations(m, p, false).saved, T * (attention + 2.0 * 18432));
  EXPECT_DOUBLE_EQ(layer_activations(m, p, true).saved,
                   T * (attention + 2.0 * (2048 + 7168) + 2.0 * 7168 * 8 * 2));
  const LayerShape moe = layer_shape(m, p, 129280, true);
  const BlockPass again = op_recompute(block_passes(BlockKind::kDecoder, moe).forward, moe);
  EXPECT_DOUBLE_EQ(gemm_flops(again, "q_up"), 2 * T * 1536 * 128 * 192);
  EXPECT_DOUBLE_EQ(gemm_flops(again, "kv_up"), 2 * T * 512 * 128 * (128 + 128));
  EXPECT_DOUBLE_EQ(gemm_flops(again, "router"), 2 * T * 7168 * 256);
  EXPECT_DOUBLE_EQ(gemm_flops(again, "shared_up.w3"), 2 * T * 7168 * 2048);
  for (const char* kept : {"q_down", "kv_down", "out_proj", "shared_up", "shared_down"}) {
    EXPECT_DOUBLE_EQ(gemm_flops(again, kept), 0.0) << kept;
  }
  const LayerShape dense = layer_shape(m, p, 129280, false);
  const BlockPass rerun = op_recompute(block_passes(BlockKind::kDecoder, dense).forward, dense);
  EXPECT_DOUBLE_EQ(gemm_flops(rerun, "mlp_up.w1"), 2 * T * 7168 * 18432);
  EXPECT_DOUBLE_EQ(gemm_flops(rerun, "mlp_down"), 2 * T * 18432 * 7168);
}

}  // namespace
}  // namespace trainsim
