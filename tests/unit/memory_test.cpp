// The memory model on a small model whose every term is computed by hand below: model state by
// ZeRO stage, activations per layer (Korthikanti et al. 2022 with GQA, a gated MLP, flash or
// materialised attention, dropout, selective and full recomputation, sequence parallelism), the
// embedding and loss stages and micro-batches in flight from the schedules (the timeline itself:
// memory_timeline_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/cost/stage_cost.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"
#include "sim/model/params.hpp"
#include "sim/plan/partition.hpp"
#include "sim/platform/kernel_shape.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// h 64, 4 layers, 4 query heads and 2 KV heads of 16 (q 64, kv 32), SwiGLU MLP of 96, vocabulary
// 1000, untied, RoPE, RMSNorm, no biases.
Model tiny() {
  Model m;
  m.name = "tiny";
  m.hidden_size = 64;
  m.num_layers = 4;
  m.num_attention_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 16;
  m.ffn_hidden_size = 96;
  m.ffn_kind = FfnKind::kSwiGLU;
  m.vocab_size = 1000;
  m.tied_embeddings = false;
  m.position_embedding = PositionEmbedding::kRope;
  m.norm = NormKind::kRMSNorm;
  return m;
}

// tp 2, pp 2, dp 4, mbs 2, seq 32, gbs 32: 4 micro-batches of T = 64 tokens; the vocabulary pads
// to 1024 (multiple of 128 x 2), 512 rows per rank.
Plan tiny_plan() {
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 4;
  p.mbs = 2;
  p.seq_len = 32;
  p.gbs = 32;
  return p;
}

Platform platform(double allocated = 0, double reserved = 0, double fragmentation = 0) {
  Platform p = test::simple_platform(450, 0, 50, 0);
  p.memory.allocated = allocated;
  p.memory.reserved = reserved;
  p.memory.fragmentation = fragmentation;
  return p;
}

MemoryModel memory_of(const Model& m, const Plan& plan, const Platform& pf) {
  const Partition part = megatron_uniform_partition(m, plan, {});
  const CostModel costs = compute_costs(m, pf, plan, part);
  return compute_memory(m, pf, plan, part, costs);
}

TEST(Memory, ParametersPerGpuOfEachStage) {
  // Layer: attention 64 x (64 + 2 x 32) + 64 x 64 = 12,288; MLP 2 x 64 x 96 + 96 x 64 = 18,432;
  // norms 2 x 64 = 128: 30,848. Per TP rank: (30,848 - 128) / 2 + 128 = 15,488.
  EXPECT_EQ(count_params(tiny()).layer(), 30848);
  EXPECT_EQ(layer_params_per_rank(tiny(), 2), 15488);
  const Model m = tiny();
  const Plan plan = tiny_plan();
  const Partition part = megatron_uniform_partition(m, plan, {});
  const CostModel costs = compute_costs(m, platform(), plan, part);
  EXPECT_EQ(costs.padded_vocab, 1024);
  // Stage 0: embedding 512 x 64 = 32,768 + 2 layers = 63,744.
  EXPECT_EQ(costs.stages[0].params_per_gpu, 32768 + 2 * 15488);
  // Stage 1: 2 layers + final norm 64 + LM head 512 x 64 = 63,808.
  EXPECT_EQ(costs.stages[1].params_per_gpu, 2 * 15488 + 64 + 32768);
}

// FP8: Transformer Engine keeps an FP8 copy of each decoder GEMM weight and its transpose, 2
// bytes per parameter beside the BF16 weight: on each stage of the tiny plan, 2 layers of
// (30,848 - 128) / 2 = 15,360 GEMM parameters per rank; the embedding, LM head and norms stay
// BF16 only.
TEST(Memory, Fp8KeepsAQuantisedCopyAndTransposeOfEachGemmWeight) {
  Plan fp8 = tiny_plan();
  fp8.precision = Precision::kFP8;
  const MemoryModel bf16_mem = memory_of(tiny(), tiny_plan(), platform());
  const MemoryModel fp8_mem = memory_of(tiny(), fp8, platform());
  for (std::size_t s = 0; s < 2; ++s) {
    EXPECT_DOUBLE_EQ(fp8_mem.stages[s].state.weights - bf16_mem.stages[s].state.weights,
                     2.0 * 2 * 15360)
        << s;
    EXPECT_DOUBLE_EQ(fp8_mem.stages[s].state.gradients, bf16_mem.stages[s].state.gradients);
  }
  // FP8 primary weights (--fp8-param-gather, with the distributed optimizer): the FP8 weight and
  // its transpose replace the BF16 weight, 2 bytes a GEMM parameter as in BF16.
  fp8.fp8_param_gather = true;
  fp8.zero = 1;
  Plan bf16 = tiny_plan();
  bf16.zero = 1;
  const MemoryModel primary = memory_of(tiny(), fp8, platform());
  const MemoryModel bf16_zero1 = memory_of(tiny(), bf16, platform());
  for (std::size_t s = 0; s < 2; ++s) {
    EXPECT_DOUBLE_EQ(primary.stages[s].state.weights, bf16_zero1.stages[s].state.weights) << s;
  }
}

TEST(Memory, ModelStateByZeroStage) {
  const std::int64_t p = 63808;
  const double P = 63808;
  // ZeRO 0: 2 (BF16 weight) + 4 (fp32 gradient) + 4 (fp32 master) + 8 (Adam moments) = 18 B.
  ModelState z0 = model_state(p, 0, 4);
  EXPECT_DOUBLE_EQ(z0.weights, 2 * P);
  EXPECT_DOUBLE_EQ(z0.gradients, 4 * P);
  EXPECT_DOUBLE_EQ(z0.master_weights, 4 * P);
  EXPECT_DOUBLE_EQ(z0.optimizer, 8 * P);
  EXPECT_DOUBLE_EQ(z0.total(), 18 * P);  // 1,148,544
  // ZeRO 1 (Megatron's distributed optimizer) over dp 4: 6 + 12 / 4 = 9 B.
  EXPECT_DOUBLE_EQ(model_state(p, 1, 4).total(), 9 * P);
  // ZeRO 2: 2 + 16 / 4 = 6 B; ZeRO 3: 18 / 4 = 4.5 B.
  EXPECT_DOUBLE_EQ(model_state(p, 2, 4).total(), 6 * P);
  EXPECT_DOUBLE_EQ(model_state(p, 3, 4).total(), 4.5 * P);
  // Megatron's theoretical memory estimator: 6 + 12 / dp with the distributed optimizer.
  EXPECT_DOUBLE_EQ(model_state(p, 1, 8).total(), (6 + 12.0 / 8) * P);
}

// The optimizer's state per parameter (--optimizer-state), ZeRO 1 over dp 4: FP32 master weights
// and moments 12 / 4; BF16 moments 8 / 4 (Megatron-Core's precision-aware optimizer with BF16
// exp_avg and exp_avg_sq); BF16 moments and no master copy 4 / 4 (NeMo 1's distributed_fused_adam,
// optim.dtype bf16). With BF16 gradient reduction the fp32 copy of the shard stays (4 / 4).
TEST(Memory, ModelStateByOptimizerState) {
  const std::int64_t p = 63808;
  const double P = 63808;
  const ModelState fp32 = model_state(p, 1, 4);
  const ModelState moments = model_state(p, 1, 4, false, OptimizerState::kBf16Moments);
  const ModelState bf16 = model_state(p, 1, 4, false, OptimizerState::kBf16);
  EXPECT_DOUBLE_EQ(fp32.total(), (6 + 12.0 / 4) * P);
  EXPECT_DOUBLE_EQ(moments.master_weights, 4.0 / 4 * P);
  EXPECT_DOUBLE_EQ(moments.optimizer, 4.0 / 4 * P);
  EXPECT_DOUBLE_EQ(moments.total(), (6 + 8.0 / 4) * P);
  EXPECT_DOUBLE_EQ(bf16.master_weights, 0);
  EXPECT_DOUBLE_EQ(bf16.optimizer, 4.0 / 4 * P);
  EXPECT_DOUBLE_EQ(bf16.total(), (6 + 4.0 / 4) * P);
  // BF16 gradients: 2 + 2 (buffer) + 4 / 4 (fp32 shard) + 4 / 4 (moments) = 6 B.
  EXPECT_DOUBLE_EQ(model_state(p, 1, 4, true, OptimizerState::kBf16).total(), 6 * P);
}

// Each optimizer state's Adam kernel is an op the kernel tables price, moving the state once each
// way beside the gradient and the BF16 weight: with a master copy, an fp32 gradient read and the
// weight written (4 + 2 x state + 2); without, a BF16 gradient read and the weight read and
// written (2 + 2 x state + 4).
TEST(Memory, EachOptimizerStatesAdamKernelMovesItsState) {
  for (const auto s :
       {OptimizerState::kFp32, OptimizerState::kBf16Moments, OptimizerState::kBf16}) {
    const OptimizerStateKind& k = kind_of(s);
    const MemoryOp* op = find_memory_op(k.adam_op);
    ASSERT_NE(op, nullptr) << k.name;
    const double state = k.master_bytes + k.moment_bytes;
    EXPECT_EQ(op->bytes_per_element, k.master_bytes > 0 ? 4 + 2 * state + 2 : 2 + 2 * state + 4)
        << k.name;
    EXPECT_STREQ(to_string(s), k.name);
  }
}

// The plan carries it to the memory model and to the optimizer step's kernel: Adam over the
// GPU's shard reads and writes 30 bytes a parameter with FP32 state, 22 with BF16 moments, 14 with
// BF16 moments and weights stepped in place. With FP8 primary weights (--fp8-param-gather) the
// bf16 kind keeps a BF16 master copy of the decoder's GEMM weights, sharded.
TEST(Memory, OptimizerStateInThePlan) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan plan;
  plan.tp = 2;
  plan.dp = 4;
  plan.gbs = 16;
  plan.seq_len = 4096;
  plan.zero = 1;
  const auto state_of = [&](const Plan& p) {
    const Partition part = build_partition(m, pf, p);
    const CostModel costs = compute_costs(m, pf, p, part);
    return std::pair{compute_memory(m, pf, p, part, costs).stages[0].state, costs};
  };
  const auto [fp32, fp32_costs] = state_of(plan);
  const double params = static_cast<double>(fp32_costs.stages[0].params_per_gpu);
  const auto adam_bytes = [](const CostModel& c) {
    for (const auto& k : c.stages[0].optimizer.kernels) {
      if (k.name.ends_with("adam")) return k.bytes;
    }
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(adam_bytes(fp32_costs), 30 * std::round(params / 4));
  plan.optimizer_state = OptimizerState::kBf16Moments;
  const auto [moments, moments_costs] = state_of(plan);
  EXPECT_DOUBLE_EQ(moments.optimizer, fp32.optimizer / 2);
  EXPECT_DOUBLE_EQ(moments.master_weights, fp32.master_weights);
  EXPECT_DOUBLE_EQ(adam_bytes(moments_costs), 22 * std::round(params / 4));
  plan.optimizer_state = OptimizerState::kBf16;
  const auto [bf16, bf16_costs] = state_of(plan);
  EXPECT_DOUBLE_EQ(bf16.master_weights, 0);
  EXPECT_DOUBLE_EQ(bf16.optimizer, fp32.optimizer / 2);
  EXPECT_DOUBLE_EQ(adam_bytes(bf16_costs), 14 * std::round(params / 4));
  plan.precision = Precision::kFP8;
  plan.fp8_param_gather = true;
  const auto [fp8, fp8_costs] = state_of(plan);
  EXPECT_DOUBLE_EQ(fp8.master_weights,
                   2.0 * static_cast<double>(fp8_costs.stages[0].gemm_params_per_gpu) / 4);
}

TEST(Memory, LayerActivationsEveryVariant) {
  const Model m = tiny();
  Plan plan = tiny_plan();
  // Flash attention (the default), no dropout; `unfused(plan)` the same plan with the s x s
  // scores materialised.
  auto unfused = [](Plan p) {
    p.attention_backend = AttentionBackend::kUnfused;
    return p;
  };
  // T = 64 tokens. Replicated over TP: two norm inputs and two norm outputs, 4 x 2 x T x h =
  // 32,768. Split by TP 2: Q 64 + K 32 + V 32 + attention output 64 + SwiGLU input 2 x 96 +
  // its output 96 = 480 columns, 2 x 64 x 480 / 2 = 30,720. Flash softmax statistics:
  // 4 x T x 4 heads / 2 = 512.
  EXPECT_DOUBLE_EQ(layer_activations(m, plan).saved, 32768 + 30720 + 512);
  EXPECT_DOUBLE_EQ(layer_activations(m, plan).recompute, 0);

  // Sequence parallelism splits the replicated part too: 32,768 / 2.
  plan.sp = true;
  EXPECT_DOUBLE_EQ(layer_activations(m, plan).saved, 16384 + 30720 + 512);
  plan.sp = false;

  // Materialised attention (Korthikanti's s^2 terms): probabilities 2 x a s^2 b / t
  // = 2 x 4 x 32 x 64 / 2 = 8,192; with attention dropout its mask (1 B) and output (2 B) too:
  // 5 x 4 x 32 x 64 / 2 = 20,480. Hidden dropout: two 1-byte masks, 2 x T x h = 8,192.
  EXPECT_DOUBLE_EQ(layer_activations(m, unfused(plan)).saved, 32768 + 30720 + 8192);
  plan.attention_dropout = 0.1;
  plan.hidden_dropout = 0.1;
  EXPECT_DOUBLE_EQ(layer_activations(m, unfused(plan)).saved, 32768 + 8192 + 30720 + 20480);
  // For MHA without GQA the split part is Korthikanti's 24 sbh / t and the replicated part his
  // 10 sbh: check against sbh (34 + 5 a s / h) at t = 1 for a GeLU MLP of 4h.
  Model mha = m;
  mha.num_kv_heads = 4;
  mha.ffn_kind = FfnKind::kGelu;
  mha.ffn_hidden_size = 256;
  Plan t1 = plan;
  t1.tp = 1;
  const double sbh = 64.0 * 64.0;
  EXPECT_DOUBLE_EQ(layer_activations(mha, unfused(t1)).saved, sbh * (34.0 + 5.0 * 4 * 32 / 64));

  // Selective recomputation drops the attention core and rebuilds it in the backward.
  plan.recompute = Recompute::kSelective;
  EXPECT_DOUBLE_EQ(layer_activations(m, unfused(plan)).saved, 32768 + 8192 + 30720);
  EXPECT_DOUBLE_EQ(layer_activations(m, unfused(plan)).recompute, 20480);
  plan.attention_dropout = plan.hidden_dropout = 0;  // as before: no masks
  EXPECT_DOUBLE_EQ(layer_activations(m, plan).saved, 32768 + 30720);
  EXPECT_DOUBLE_EQ(layer_activations(m, plan).recompute, 512);

  // Full recomputation keeps the layer input, 2 x T x h = 8,192 (4,096 with SP), and rebuilds
  // the whole layer in the backward.
  plan.recompute = Recompute::kFull;
  EXPECT_DOUBLE_EQ(layer_activations(m, plan).saved, 8192);
  EXPECT_DOUBLE_EQ(layer_activations(m, plan).recompute, 32768 + 30720 + 512);
  plan.sp = true;
  EXPECT_DOUBLE_EQ(layer_activations(m, plan).saved, 4096);
}

// FP8 (Transformer Engine on Hopper): a GEMM keeps its input for the weight gradient as the FP8
// transpose it quantised, 1 byte an element. The QKV and MLP-up inputs (the norms' outputs) and
// the down projection's input (the activation's output) are kept by their GEMM alone: 2 -> 1
// byte. The attention output is also kept by fused attention in BF16: its projection's FP8 copy
// comes on top, +1 byte. The tiny model at T = 64: replicated 2 x T x h (1 byte less each) =
// -8,192; split by TP 2: attention output copy T x 64 / 2 = +2,048, SwiGLU output T x 96 / 2 =
// -3,072.
TEST(Memory, Fp8KeepsEachGemmInputAsItsQuantisedTranspose) {
  const Model m = tiny();
  Plan plan = tiny_plan();
  const double bf16 = layer_activations(m, plan).saved;
  plan.precision = Precision::kFP8;
  EXPECT_DOUBLE_EQ(layer_activations(m, plan).saved, bf16 - 8192 + 2048 - 3072);
  // An MoE layer (Qwen3-30B-A3B at EP 8, TP 1, mbs 1 x 4096, no shared expert): the router keeps
  // the MLP norm's output in BF16, so only the experts' inputs (rows x 2048) and down-projection
  // inputs (rows x 768) and the QKV input (T x 2048) drop a byte, and the attention output
  // (T x 4096) gains its copy; rows = 4096 x 8 routed.
  const Model q = test::catalog_model("qwen3-30b-a3b");
  Plan moe;
  moe.ep = 8;
  moe.dp = 8;
  moe.seq_len = 4096;
  moe.gbs = 64;
  const double moe_bf16 = layer_activations(q, moe, true).saved;
  moe.precision = Precision::kFP8;
  const double T = 4096, rows = 4096.0 * 8;
  EXPECT_DOUBLE_EQ(layer_activations(q, moe, true).saved,
                   moe_bf16 - rows * (2048 + 768) - T * 2048 + T * 4096);
  // MLA (DeepSeek-V3's dense first layer, TP 1): the two down-projections each keep an FP8 copy
  // of their shared input, as many bytes as the BF16 tensor; the latent norms run fused into the
  // up-projections, so their outputs (1536 + 512 wide) drop a byte; the MLP's norm output
  // (7168) and down-projection input (18432) drop a byte; the attention output (128 x 128) gains
  // its copy.
  const Model ds = test::catalog_model("deepseek-v3");
  Plan mla = moe;
  mla.precision = Precision::kBF16;
  const double mla_bf16 = layer_activations(ds, mla, false).saved;
  mla.precision = Precision::kFP8;
  EXPECT_DOUBLE_EQ(layer_activations(ds, mla, false).saved,
                   mla_bf16 - T * (1536 + 512) - T * 7168 - T * 18432 + T * 128 * 128);
}

TEST(Memory, StageFootprintsEmbeddingAndLoss) {
  const Model m = tiny();
  const Plan plan = tiny_plan();
  const Partition part = megatron_uniform_partition(m, plan, {});
  const double layer = 64000;
  // Stage 0: token ids 8 x T = 512 and two layers.
  const PassFootprint s0 = stage_footprint(m, plan, part, 0, 1024);
  EXPECT_DOUBLE_EQ(s0.saved, 512 + 2 * layer);
  EXPECT_DOUBLE_EQ(s0.forward_transient, 0);
  EXPECT_DOUBLE_EQ(s0.backward_transient, 0);
  // Stage 1: two layers, the final norm's and the LM head's inputs (2 x 2 x T x h = 16,384) and
  // the loss's fp32 softmax over T x 512 logits per GPU (4 x 32,768 = 131,072); the BF16 logits
  // (65,536) live beside it while the loss runs, and the BF16 logits gradient in the backward.
  const PassFootprint s1 = stage_footprint(m, plan, part, 1, 1024);
  EXPECT_DOUBLE_EQ(s1.saved, 2 * layer + 16384 + 131072);
  EXPECT_DOUBLE_EQ(s1.forward_transient, 65536);
  EXPECT_DOUBLE_EQ(s1.backward_transient, 65536);
  // Megatron-Core's fused (native) cross-entropy: a second fp32 tensor of the logits (131,072)
  // beside the fp32 copy and the BF16 logits while the loss runs; the same softmax kept, the same
  // backward. Megatron-LM's CI measured +390.5 MiB between the fused and plain runs of one model,
  // 4 bytes of its 4,096 x 25,216 logits per GPU (394.0 MiB).
  Plan fused = plan;
  fused.cross_entropy_loss_fusion = true;
  const PassFootprint f1 = stage_footprint(m, fused, part, 1, 1024);
  EXPECT_DOUBLE_EQ(f1.saved, s1.saved);
  EXPECT_DOUBLE_EQ(f1.forward_transient, 65536 + 131072);
  EXPECT_DOUBLE_EQ(f1.backward_transient, s1.backward_transient);
  EXPECT_DOUBLE_EQ(stage_footprint(m, fused, part, 0, 1024).forward_transient, 0);

  // With hidden dropout the embedding keeps its 1-byte mask, T x h = 4,096 (2,048 with SP).
  Plan sp = plan;
  sp.sp = true;
  sp.hidden_dropout = 0.1;
  EXPECT_DOUBLE_EQ(stage_footprint(m, sp, part, 0, 1024).saved,
                   512 + 2048 + 2 * layer_activations(m, sp).saved);

  // ZeRO 3: the gathered BF16 weights of the running and the prefetched block (the largest
  // block of stage 1 is the LM head, 512 x 64 = 32,768 parameters) in both passes, and one
  // block's fp32 gradients before the reduce-scatter in the backward.
  Plan z3 = plan;
  z3.zero = 3;
  const PassFootprint f3 = stage_footprint(m, z3, part, 1, 1024);
  EXPECT_DOUBLE_EQ(f3.forward_transient, 65536 + 2 * 2 * 32768.0);
  EXPECT_DOUBLE_EQ(f3.backward_transient, 65536 + 2 * 2 * 32768.0 + 4 * 32768.0);
}

TEST(Memory, MicrobatchesInFlightComeFromTheSchedule) {
  const Model m = tiny();
  Plan plan = tiny_plan();  // 4 micro-batches
  const double state0 = 18.0 * 63744;
  const double state1 = 18.0 * 63808;
  const double s0 = 512 + 2 * 64000.0;
  const double s1 = 2 * 64000.0 + 16384 + 131072;

  // 1F1B: stage 0 warms up p - s - 1 = 1 forward, so 2 micro-batches are in flight at its peak;
  // the last stage runs each forward's backward at once: 1 in flight.
  MemoryModel mm = memory_of(m, plan, platform());
  EXPECT_EQ(mm.stages[0].timeline.peak_in_flight, 2);
  EXPECT_DOUBLE_EQ(mm.stages[0].peak_allocated, state0 + 2 * s0);
  EXPECT_EQ(mm.stages[0].timeline.peak_step, 1);  // F0 F1 | B0 F2 B1 F3 B2 B3
  const std::vector<double> after = {s0, 2 * s0, s0, 2 * s0, s0, 2 * s0, s0, 0};
  ASSERT_EQ(mm.stages[0].timeline.after_step.size(), after.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_DOUBLE_EQ(mm.stages[0].timeline.after_step[i], state0 + after[i]) << i;
  }
  EXPECT_EQ(mm.stages[1].timeline.peak_in_flight, 1);
  EXPECT_DOUBLE_EQ(mm.stages[1].peak_allocated, state1 + s1 + 65536);
  EXPECT_EQ(mm.stages[1].timeline.peak_step, 0);  // the loss of the first forward

  // GPipe: all 4 forwards before any backward on every stage.
  plan.schedule = ScheduleKind::kGPipe;
  mm = memory_of(m, plan, platform());
  EXPECT_EQ(mm.stages[0].timeline.peak_in_flight, 4);
  EXPECT_DOUBLE_EQ(mm.stages[0].peak_allocated, state0 + 4 * s0);
  EXPECT_EQ(mm.stages[1].timeline.peak_in_flight, 4);
  EXPECT_DOUBLE_EQ(mm.stages[1].peak_allocated, state1 + 4 * s1 + 65536);
  EXPECT_EQ(mm.stages[1].timeline.peak_step, 3);

  // Fewer micro-batches than stages: 1F1B's warm-up is min(p - s - 1, m).
  plan.schedule = ScheduleKind::k1F1B;
  plan.gbs = 8;  // 1 micro-batch
  mm = memory_of(m, plan, platform());
  EXPECT_EQ(mm.stages[0].timeline.peak_in_flight, 1);
}

TEST(Memory, FullRecomputationRebuildsOneLayerInTheBackward) {
  const Model m = tiny();
  Plan plan = tiny_plan();
  plan.recompute = Recompute::kFull;
  const MemoryModel mm = memory_of(m, plan, platform());
  // Stage 0 keeps 512 + 2 x 8,192 per micro-batch; the peak is a backward with 2 in flight plus
  // one layer rebuilt (64,000).
  const double s0 = 512 + 2 * 8192.0;
  EXPECT_DOUBLE_EQ(mm.stages[0].footprint.backward_transient, 64000);
  EXPECT_DOUBLE_EQ(mm.stages[0].peak_allocated, 18.0 * 63744 + 2 * s0 + 64000);
  // Stage 1: the loss's BF16 logits (65,536) outweigh a rebuilt layer.
  EXPECT_DOUBLE_EQ(mm.stages[1].footprint.backward_transient, 65536);
}

TEST(Memory, RuntimeTermsAndCapacity) {
  const Model m = tiny();
  const Plan plan = tiny_plan();
  const double allocated = 1e6;
  const double reserved = 5e6;
  const MemoryModel mm = memory_of(m, plan, platform(allocated, reserved, 0.1));
  const double peak = 18.0 * 63808 + 2 * 64000.0 + 16384 + 131072 + 65536 + allocated;
  EXPECT_DOUBLE_EQ(mm.stages[1].peak_allocated, peak);
  EXPECT_DOUBLE_EQ(mm.stages[1].peak_bytes, peak * 1.1 + reserved);
  EXPECT_DOUBLE_EQ(mm.capacity, 80.0 * (1ull << 30));
  EXPECT_TRUE(mm.fits());
  EXPECT_EQ(mm.worst_stage(), 1);
}

// Megatron's --decoder-first-pipeline-num-layers 5 over pp 4 puts 5 of 8 layers on stage 0: its
// peak, not the mean over stages, is what must fit. An estimator that divides the model evenly
// by pp (2 layers per stage) under-counts it.
TEST(Memory, UnevenPartitionPeakIsTheHeaviestStage) {
  Model m = tiny();
  m.num_layers = 8;
  Plan plan = tiny_plan();
  plan.pp = 4;
  plan.dp = 1;
  plan.gbs = 8;  // 4 micro-batches
  plan.decoder_first_pipeline_num_layers = 5;
  const Partition part = megatron_uniform_partition(m, plan, {});
  ASSERT_EQ(part.decoder_counts(), (std::vector<std::int64_t>{5, 1, 1, 1}));
  const MemoryModel mm = memory_of(m, plan, platform());
  // Stage 0: embedding 32,768 + 5 x 15,488 parameters at 18 B; 1F1B keeps p - 0 = 4 micro-batches
  // of 512 + 5 x 64,000 bytes.
  const double stage0 = 18.0 * (32768 + 5 * 15488) + 4 * (512 + 5 * 64000.0);
  EXPECT_EQ(mm.worst_stage(), 0);
  EXPECT_DOUBLE_EQ(mm.stages[0].peak_allocated, stage0);
  double sum = 0;
  for (const auto& s : mm.stages) sum += s.peak_allocated;
  const double mean = sum / 4;
  EXPECT_GT(stage0, 1.5 * mean);
  // The even split (2 layers on each stage, embedding and 4 in flight on the first) is lower.
  const double even0 = 18.0 * (32768 + 2 * 15488) + 4 * (512 + 2 * 64000.0);
  EXPECT_LT(even0, 0.6 * stage0);
}

}  // namespace
}  // namespace trainsim
