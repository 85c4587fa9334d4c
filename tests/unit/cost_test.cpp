#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/cost/stage_cost.hpp"
#include "sim/memory/memory.hpp"
#include "sim/model/params.hpp"
#include "sim/plan/partition.hpp"
#include "sim/platform/kernel_db.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// A pass's tensor-parallel all-reduces.
CollectiveLoad tp_allreduce(const PassCost& pass) {
  return collective_load(pass.collectives, CollectiveKind::kAllReduce, Dim::kTP);
}

double sum_flops(const PassCost& pass, KernelKind kind) {
  double f = 0;
  for (const auto& k : pass.kernels) {
    if (k.kind == kind) f += k.flops * static_cast<double>(k.count);
  }
  return f;
}

Plan plan_of(std::int64_t tp, std::int64_t pp, std::int64_t seq) {
  Plan p;
  p.tp = tp;
  p.pp = pp;
  p.seq_len = seq;
  return p;
}

// Forward + backward GEMM FLOPs of a whole model are 6 per weight per token (Megatron's
// convention), whatever the TP and PP split.
TEST(CostModel, GemmFlopsAreSixPerWeightPerToken) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const double T = 4096;
  const double h = 4096, q = 4096, kv = 1024, f = 14336, V = 128256;
  const double weights_per_layer = h * (2 * q + 2 * kv) + 3 * h * f;
  const double expected = 6.0 * T * (32 * weights_per_layer + h * V);
  for (std::int64_t tp : {1, 2, 4, 8}) {
    for (std::int64_t pp : {1, 2, 4}) {
      Plan p = plan_of(tp, pp, 4096);
      const auto part = test::uniform_partition(m, pp);
      const auto cm = compute_costs(m, pf, p, part);
      double total = 0;
      for (const auto& s : cm.stages) {
        total += sum_flops(s.forward, KernelKind::kGemm) + sum_flops(s.backward, KernelKind::kGemm);
      }
      // Megatron pads the vocabulary to a multiple of 128 x tp; the padded rows are computed too.
      const double padded = static_cast<double>(cm.padded_vocab);
      EXPECT_NEAR(total * static_cast<double>(tp), expected + 6.0 * T * h * (padded - V),
                  1e-9 * expected)
          << tp << " " << pp;
    }
  }
}

TEST(CostModel, CausalAttentionFlops) {
  const Model m = test::catalog_model("llama3.1-8b");
  const auto cm = compute_costs(m, test::catalog_platform("h100-sxm-ndr"), plan_of(2, 1, 8192),
                                test::uniform_partition(m, 1));
  // Forward: QK^T and AV over the unmasked half: 4 s^2 (a d) / 2 per layer, split over TP.
  const double per_layer = 4.0 * 8192.0 * 8192.0 * 4096.0 / 2.0 / 2.0;
  EXPECT_DOUBLE_EQ(sum_flops(cm.stages[0].forward, KernelKind::kAttention), 32 * per_layer);
  EXPECT_DOUBLE_EQ(sum_flops(cm.stages[0].backward, KernelKind::kAttention), 2.5 * 32 * per_layer);
}

TEST(CostModel, TensorParallelAllReducesPerPass) {
  const Model m = test::catalog_model("llama3.1-70b");
  Plan p = plan_of(4, 4, 8192);
  const auto cm =
      compute_costs(m, test::catalog_platform("h100-sxm-ndr"), p, test::uniform_partition(m, 4));
  const double act = 8192.0 * 8192.0 * 2.0;  // b s h in BF16
  // Two per layer each way; the embedding adds one forward; the LM head one backward; the
  // vocabulary-parallel cross-entropy three small ones forward.
  EXPECT_EQ(tp_allreduce(cm.stages[1].forward).count, 40);
  EXPECT_DOUBLE_EQ(tp_allreduce(cm.stages[1].forward).bytes, 40 * act);
  EXPECT_EQ(tp_allreduce(cm.stages[1].backward).count, 40);
  EXPECT_EQ(tp_allreduce(cm.stages[0].forward).count, 41);
  EXPECT_EQ(tp_allreduce(cm.stages[3].forward).count, 43);
  EXPECT_DOUBLE_EQ(tp_allreduce(cm.stages[3].forward).bytes, 40 * act + 3 * 8192.0 * 4.0);
  EXPECT_EQ(tp_allreduce(cm.stages[3].backward).count, 41);
  EXPECT_DOUBLE_EQ(cm.stages[2].p2p_bytes, act);
}

// FP8 runs the decoder's GEMMs in FP8 and the LM head in BF16: Megatron-Core's output layer is
// not a Transformer Engine module and runs outside the decoder's FP8 autocast.
TEST(CostModel, Fp8DecoderGemmsAndABf16LmHead) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p = plan_of(2, 2, 4096);
  p.precision = Precision::kFP8;
  const auto cm =
      compute_costs(m, test::catalog_platform("h100-sxm-ndr"), p, test::uniform_partition(m, 2));
  std::int64_t lm_head = 0, fp8 = 0;
  for (const auto& s : cm.stages) {
    for (const auto* pass : {&s.forward, &s.backward}) {
      for (const auto& k : pass->kernels) {
        const auto* g = std::get_if<GemmShape>(&k.shape);
        if (g == nullptr) continue;
        if (k.name.rfind("lm_head", 0) == 0) {
          ++lm_head;
          EXPECT_EQ(g->dtype, DType::kBF16) << k.name;
        } else {
          ++fp8;
          EXPECT_EQ(g->dtype, DType::kFP8) << k.name;
        }
      }
    }
  }
  EXPECT_EQ(lm_head, 3);  // forward, dgrad, wgrad on the last stage
  EXPECT_GT(fp8, 0);
}

// Transformer Engine quantises each FP8 GEMM's activation operand before the forward GEMM and
// its output gradient before the backward GEMMs: 4 bytes per element (read BF16, write FP8 and
// its transpose), timed as the H100 suite measured the cast-transpose at that shape, and by
// the roofline at the platform's memory bandwidth without a database.
TEST(CostModel, Fp8GemmOperandsAreCastFirst) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p = plan_of(2, 1, 4096);
  p.precision = Precision::kFP8;
  Platform platform = test::catalog_platform("h100-sxm-ndr");
  const auto measured = compute_costs(m, platform, p, test::uniform_partition(m, 1));
  const auto db_hit = platform.kernel_db->lookup(MemoryShape{"fp8_cast_transpose", 4096, 4096});
  platform.kernel_db = nullptr;
  const auto fp8 = compute_costs(m, platform, p, test::uniform_partition(m, 1));
  p.precision = Precision::kBF16;
  const auto bf16 = compute_costs(m, platform, p, test::uniform_partition(m, 1));
  auto find = [](const PassCost& pass, const std::string& name) -> const KernelCost* {
    for (const auto& k : pass.kernels) {
      if (k.name == name) return &k;
    }
    return nullptr;
  };
  const auto& s = fp8.stages[0];
  const double tokens = 4096, h = 4096, ffn = 14336.0 / 2;
  const auto* up = find(s.forward, "decoder.mlp_up.fp8_cast");
  ASSERT_NE(up, nullptr);
  const auto* up_measured = find(measured.stages[0].forward, "decoder.mlp_up.fp8_cast");
  ASSERT_NE(up_measured, nullptr);
  ASSERT_TRUE(db_hit.has_value());
  EXPECT_EQ(db_hit->match, KernelDbMatch::kExact);
  EXPECT_EQ(up_measured->time.source, TimeSource::kMeasured);
  EXPECT_DOUBLE_EQ(up_measured->time.seconds, db_hit->seconds);
  EXPECT_DOUBLE_EQ(up->bytes, tokens * h * 4);
  EXPECT_EQ(up->count, 32);
  EXPECT_EQ(up->time.source, TimeSource::kRoofline);
  EXPECT_DOUBLE_EQ(up->time.seconds,
                   tokens * h * 4 / (platform.gpu.hbm_bandwidth * platform.efficiency.memory));
  const auto* down = find(s.forward, "decoder.mlp_down.fp8_cast");
  ASSERT_NE(down, nullptr);
  EXPECT_DOUBLE_EQ(down->bytes, tokens * ffn * 4);
  // The backward quantises mlp_up's output gradient: both halves of the gated projection.
  const auto* up_grad = find(s.backward, "decoder.mlp_up.grad_fp8_cast");
  ASSERT_NE(up_grad, nullptr);
  EXPECT_DOUBLE_EQ(up_grad->bytes, tokens * 2 * ffn * 4);
  // One cast per decoder GEMM and pass (4 forward, 4 backward); none in BF16 or for the LM head.
  auto casts = [](const PassCost& pass) {
    return std::count_if(pass.kernels.begin(), pass.kernels.end(), [](const KernelCost& k) {
      return std::get<MemoryShape>(k.shape).op == "fp8_cast_transpose";
    });
  };
  auto memory_only = [](PassCost pass) {
    std::erase_if(pass.kernels, [](const KernelCost& k) {
      return !std::holds_alternative<MemoryShape>(k.shape);
    });
    return pass;
  };
  EXPECT_EQ(casts(memory_only(s.forward)), 4);
  EXPECT_EQ(casts(memory_only(s.backward)), 4);
  EXPECT_EQ(casts(memory_only(bf16.stages[0].forward)), 0);
  EXPECT_EQ(find(s.backward, "lm_head.grad_fp8_cast"), nullptr);
}

TEST(CostModel, TpOneHasNoAllReduces) {
  const Model m = test::catalog_model("llama3.1-8b");
  const auto cm = compute_costs(m, test::catalog_platform("h100-sxm-ndr"), plan_of(1, 2, 4096),
                                test::uniform_partition(m, 2));
  for (const auto& s : cm.stages) {
    EXPECT_EQ(tp_allreduce(s.forward).count, 0);
    EXPECT_EQ(tp_allreduce(s.backward).count, 0);
  }
}

TEST(CostModel, ParamsPerGpuAddUpToTheModel) {
  const Model m = test::catalog_model("llama3.1-8b");
  const auto cm = compute_costs(m, test::catalog_platform("h100-sxm-ndr"), plan_of(1, 4, 4096),
                                test::uniform_partition(m, 4));
  std::int64_t held = 0;
  std::int64_t logical = 0;
  for (const auto& s : cm.stages) {
    held += s.params_per_gpu;
    logical += s.params;
    EXPECT_DOUBLE_EQ(s.grad_bytes, 4.0 * static_cast<double>(s.params_per_gpu));
  }
  EXPECT_EQ(held, total_params(m));
  EXPECT_EQ(logical, total_params(m));
  // At tp 8 every sharded weight is split 8 ways; norms are replicated; vocabulary padded.
  const auto cm8 = compute_costs(m, test::catalog_platform("h100-sxm-ndr"), plan_of(8, 1, 4096),
                                 test::uniform_partition(m, 1));
  const auto c = count_params(m);
  const std::int64_t expected = 32 * ((c.layer() - c.layer_norms) / 8 + c.layer_norms) +
                                2 * (129024 / 8) * 4096 + c.final_norm;
  EXPECT_EQ(cm8.stages[0].params_per_gpu, expected);
}

TEST(Roofline, ComputeOrMemoryBound) {
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  // A large GEMM is compute bound at the GEMM efficiency.
  auto t = roofline_time(pf, Precision::kBF16, KernelKind::kGemm, 1e12, 1e6);
  EXPECT_DOUBLE_EQ(t.seconds, 1e12 / (989e12 * pf.efficiency.gemm));
  EXPECT_EQ(t.source, TimeSource::kRoofline);
  // FP8 doubles the peak, at its own (measured) efficiency.
  EXPECT_DOUBLE_EQ(roofline_time(pf, Precision::kFP8, KernelKind::kGemm, 1e12, 1e6).seconds,
                   1e12 / (1979e12 * pf.efficiency.gemm_fp8));
  EXPECT_LT(pf.efficiency.gemm_fp8, pf.efficiency.gemm);
  // Elementwise kernels move bytes.
  EXPECT_DOUBLE_EQ(roofline_time(pf, Precision::kBF16, KernelKind::kElementwise, 0, 3.35e9).seconds,
                   1e-3 / pf.efficiency.memory);
}

// --recompute full re-runs each decoder layer's forward (with its TP all-reduces) before the
// backward; selective re-runs the attention core only (Korthikanti et al. 2022).
TEST(CostModel, RecomputeIsTheDecodersForwardOrTheAttentionCore) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan p = plan_of(2, 4, 4096);
  const auto part = test::uniform_partition(m, 4);
  p.recompute = Recompute::kFull;
  const CostModel full = compute_costs(m, pf, p, part);
  p.recompute = Recompute::kSelective;
  const CostModel selective = compute_costs(m, pf, p, part);
  p.recompute = Recompute::kNone;
  const CostModel none = compute_costs(m, pf, p, part);
  for (std::size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(none.stages[s].recompute.seconds, 0.0);
    double decoder_fwd = 0, attention_fwd = 0;
    for (const auto& k : none.stages[s].forward.kernels) {
      const double t = k.time.seconds * static_cast<double>(k.count);
      if (k.name.starts_with("decoder.")) decoder_fwd += t;
      if (k.kind == KernelKind::kAttention) attention_fwd += t;
    }
    EXPECT_NEAR(full.stages[s].recompute.seconds, decoder_fwd, 1e-12 * decoder_fwd);
    EXPECT_NEAR(selective.stages[s].recompute.seconds, attention_fwd, 1e-12 * attention_fwd);
    // Two TP all-reduces per recomputed layer (full), none for the attention core.
    EXPECT_EQ(tp_allreduce(full.stages[s].recompute).count,
              2 * part.decoders(static_cast<std::int64_t>(s)));
    EXPECT_EQ(tp_allreduce(selective.stages[s].recompute).count, 0);
    // The forward and backward themselves do not change.
    EXPECT_EQ(full.stages[s].forward.seconds, none.stages[s].forward.seconds);
    EXPECT_EQ(full.stages[s].backward.seconds, none.stages[s].backward.seconds);
  }
  // A middle stage holds decoders only: its full recomputation is its whole forward.
  EXPECT_NEAR(full.stages[1].recompute.seconds, none.stages[1].forward.seconds,
              1e-12 * none.stages[1].forward.seconds);
  EXPECT_EQ(tp_allreduce(full.stages[1].recompute).bytes,
            tp_allreduce(none.stages[1].forward).bytes);
}

// The unfused attention backend: per layer and micro-batch, the QK^T and PV batched GEMMs over
// the full s x s scores of every head (2 b a s^2 d FLOPs each; 4 of them in the backward), a
// softmax reading and writing b a s^2 BF16 elements (its gradient reads two and writes one), the
// rest of the layer unchanged; selective recomputation re-runs that core, and the memory model
// keeps the scores, as it does for options without flash attention.
TEST(CostModel, UnfusedAttentionIsBatchedGemmsAroundASoftmax) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan p = plan_of(2, 1, 2048);
  p.mbs = 2;
  p.recompute = Recompute::kSelective;
  const auto part = test::uniform_partition(m, 1);
  const CostModel flash = compute_costs(m, pf, p, part);
  p.attention_backend = AttentionBackend::kUnfused;
  const CostModel unfused = compute_costs(m, pf, p, part);
  const double b = 2, a = 32.0 / 2, s = 2048, d = 128, layers = 32;
  const double core = 2 * b * a * s * s * d;
  auto find = [](const PassCost& pass, const std::string& name) -> const KernelCost* {
    for (const auto& k : pass.kernels) {
      if (k.name == name) return &k;
    }
    return nullptr;
  };
  const auto& st = unfused.stages[0];
  for (const char* name : {"decoder.attention.scores", "decoder.attention.context"}) {
    const auto* k = find(st.forward, name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_EQ(k->kind, KernelKind::kGemm);
    EXPECT_DOUBLE_EQ(k->flops, core) << name;
    EXPECT_EQ(k->count, layers);
  }
  const auto* softmax = find(st.forward, "decoder.attention.softmax");
  ASSERT_NE(softmax, nullptr);
  EXPECT_DOUBLE_EQ(softmax->bytes, 4 * b * a * s * s);
  EXPECT_EQ(find(st.forward, "decoder.attention"), nullptr);
  double backward_core = 0;
  for (const auto& k : st.backward.kernels) {
    if (k.name.starts_with("decoder.attention.") && k.kind == KernelKind::kGemm)
      backward_core += k.flops;
  }
  EXPECT_DOUBLE_EQ(backward_core, 4 * core);
  EXPECT_DOUBLE_EQ(find(st.backward, "decoder.attention.softmax.grad")->bytes, 6 * b * a * s * s);
  EXPECT_EQ(find(st.backward, "decoder.attention.grad"), nullptr);
  // The rest of the layer: the same GEMM FLOPs as with flash attention.
  EXPECT_DOUBLE_EQ(sum_flops(st.forward, KernelKind::kGemm) - 2 * core * layers,
                   sum_flops(flash.stages[0].forward, KernelKind::kGemm));
  // Selective recomputation: the three kernels of the core, once per layer.
  double core_seconds = 0;
  for (const auto& k : st.forward.kernels) {
    if (k.name.starts_with("decoder.attention."))
      core_seconds += k.time.seconds * static_cast<double>(k.count);
  }
  EXPECT_NEAR(st.recompute.seconds, core_seconds, 1e-12 * core_seconds);
  // Memory, without recomputation (selective would drop the scores): the backend decides
  // whether they are kept. Each layer keeps the BF16 probabilities, 2 b a s^2 bytes, where flash
  // attention keeps its fp32 statistics, 4 b s a.
  p.recompute = Recompute::kNone;
  Plan flash_plan = p;
  flash_plan.attention_backend = AttentionBackend::kFlash;
  const auto kept = compute_memory(m, pf, p, part, unfused);
  const auto stats = compute_memory(m, pf, flash_plan, part, flash);
  EXPECT_DOUBLE_EQ(kept.stages[0].footprint.saved - stats.stages[0].footprint.saved,
                   layers * (2 * b * a * s * s - 4 * b * s * a));
}

// Zero-bubble split: input gradient + weight gradient = the whole backward.
TEST(CostModel, BackwardSplitsIntoInputAndWeightGradients) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const Plan p = plan_of(2, 2, 4096);
  const CostModel c = compute_costs(m, pf, p, test::uniform_partition(m, 2));
  for (const auto& s : c.stages) {
    EXPECT_NEAR(s.backward_input.seconds + s.backward_weight.seconds, s.backward.seconds,
                1e-12 * s.backward.seconds);
    EXPECT_EQ(tp_allreduce(s.backward_input).count, tp_allreduce(s.backward).count);
    EXPECT_EQ(tp_allreduce(s.backward_weight).count, 0);
    // The weight-gradient GEMMs are half the backward GEMM FLOPs.
    EXPECT_NEAR(sum_flops(s.backward_weight, KernelKind::kGemm),
                0.5 * sum_flops(s.backward, KernelKind::kGemm),
                1e-9 * sum_flops(s.backward, KernelKind::kGemm));
  }
}

// Sequence parallelism shards the norms and residual adds and the pipeline messages over TP.
TEST(CostModel, SequenceParallelShardsNormsAndMessages) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan p = plan_of(4, 2, 4096);
  const auto part = test::uniform_partition(m, 2);
  const CostModel off = compute_costs(m, pf, p, part);
  p.sp = true;
  const CostModel on = compute_costs(m, pf, p, part);
  EXPECT_DOUBLE_EQ(on.stages[0].p2p_bytes, off.stages[0].p2p_bytes / 4);
  for (std::size_t i = 0; i < on.stages[1].forward.kernels.size(); ++i) {
    const auto& a = off.stages[1].forward.kernels[i];
    const auto& b = on.stages[1].forward.kernels[i];
    const bool sharded = a.name.ends_with("norm") || a.name.ends_with("residual_add");
    EXPECT_DOUBLE_EQ(b.bytes, sharded ? a.bytes / 4 : a.bytes) << a.name;
  }
  // Each decoder layer's two all-reduces become an all-gather and a reduce-scatter each, of the
  // same buffer; the loss's all-reduces stay, and the LM head gathers its input first.
  const auto gathers = [](const PassCost& pass) {
    return collective_load(pass.collectives, CollectiveKind::kAllGather, Dim::kTP);
  };
  const auto scatters = [](const PassCost& pass) {
    return collective_load(pass.collectives, CollectiveKind::kReduceScatter, Dim::kTP);
  };
  const double loss = 3 * 4096.0 * 4.0, input = 4096.0 * 4096.0 * 2.0;
  const double decoders = tp_allreduce(off.stages[1].forward).bytes - loss;
  EXPECT_DOUBLE_EQ(tp_allreduce(on.stages[1].forward).bytes, loss);
  EXPECT_EQ(gathers(on.stages[1].forward).count, 2 * 16 + 1);
  EXPECT_DOUBLE_EQ(gathers(on.stages[1].forward).bytes, decoders + input);
  EXPECT_EQ(scatters(on.stages[1].forward).count, 2 * 16);
  EXPECT_DOUBLE_EQ(scatters(on.stages[1].forward).bytes, decoders);
}

}  // namespace
}  // namespace trainsim
