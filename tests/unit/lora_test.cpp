// LoRA fine-tuning (--lora-rank, --lora-target-modules): its rules, the frozen model's backward
// without weight gradients, the adapters' kernels, calls and parameters in closed form, and the
// model state, gradient reduction and optimizer step of the adapters alone.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <variant>

#include "sim/cost/stage_cost.hpp"
#include "sim/cost/step_flops.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/graph/builder.hpp"
#include "sim/memory/memory.hpp"
#include "sim/model/flops.hpp"
#include "sim/plan/layout.hpp"
#include "tests/support/pass_kernels.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// Llama 3.1 8B at tp 2 with sequence parallelism, one stage, sequences of 4096.
Plan lora_plan(std::int64_t rank, std::uint32_t targets = kLoraQkv) {
  Plan p;
  p.tp = 2;
  p.sp = true;
  p.dp = 1;
  p.gbs = 1;
  p.seq_len = 4096;
  p.lora_rank = rank;
  p.lora_target_modules = rank > 0 ? targets : kLoraAllModules;
  return p;
}

struct Priced {
  StageCost cost;
  StageMemory memory;
};

Priced priced(const Plan& p) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const Partition part = test::uniform_partition(m, 1);
  const CostModel costs = compute_costs(m, pf, p, part);
  return {costs.stages[0], compute_memory(m, pf, p, part, costs).stages[0]};
}

TEST(Lora, RulesOneLineEach) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p = lora_plan(8);
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  p.lora_rank = 7;
  EXPECT_EQ(test::plan_error(p, m),
            "--lora-rank: must be divisible by --tp 2 (an adapter beside linear_qkv or linear_fc1 "
            "splits its rank over TP), got 7");
  p.lora_target_modules = kLoraProj | kLoraFc2;  // row-parallel targets keep A's rank whole
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  p = lora_plan(0);
  p.lora_target_modules = kLoraQkv;
  EXPECT_EQ(test::plan_error(p, m),
            "--lora-target-modules: chooses the linears LoRA adapts, so it needs --lora-rank N "
            "(got 0: every weight trained)");
  p = lora_plan(8);
  p.zero = 2;
  EXPECT_EQ(test::plan_error(p, m),
            "--zero: with LoRA is modelled up to 1 (Megatron-LM's distributed optimizer over the "
            "adapters), got 2");
  p = lora_plan(8);
  p.pp = 2;
  p.defer_embedding_wgrad_compute = true;
  EXPECT_EQ(test::plan_error(p, m),
            "--defer-embedding-wgrad-compute: has nothing to defer under LoRA, which freezes the "
            "LM head (no weight gradient)");
  Plan moe = lora_plan(8);
  moe.tp = 1;
  moe.sp = false;
  EXPECT_EQ(test::plan_error(moe, test::catalog_model("mixtral-8x7b")),
            "--lora-rank: LoRA is modelled on dense models' decoder layers: adapters on a "
            "mixture-of-experts model's experts are not");
}

// The frozen backward: no weight-gradient GEMM but the adapters' (nor the embedding's
// gradient), every data gradient kept; with SP each column-parallel linear's input is no longer
// gathered again (two all-gathers of T x h a layer fewer, and the LM head's) and its input
// gradient's
// reduce-scatter, beside the weight gradient before, runs after the pass, as many bytes.
TEST(Lora, FrozenBackwardKeepsDataGradientsOnly) {
  const Priced full = priced(lora_plan(0));
  const Priced lora = priced(lora_plan(8));
  std::int64_t dgrads_full = 0, dgrads_lora = 0;
  for (const auto& k : full.cost.backward.kernels) dgrads_full += k.name.ends_with(".dgrad");
  for (const auto& k : lora.cost.backward.kernels) {
    if (k.name.find(".lora_") != std::string::npos) continue;
    dgrads_lora += k.name.ends_with(".dgrad");
    EXPECT_FALSE(k.name.ends_with(".wgrad")) << k.name;
    EXPECT_NE(k.name, "embedding.grad");
  }
  EXPECT_EQ(dgrads_lora, dgrads_full);
  const double T = 4096, h = 4096, e = 2;
  const auto gathers = [](const PassCost& p) {
    return collective_load(p.collectives, CollectiveKind::kAllGather, Dim::kTP);
  };
  EXPECT_DOUBLE_EQ(gathers(full.cost.backward).bytes - gathers(lora.cost.backward).bytes,
                   (32 * 2 + 1) * T * h * e);
  double rs_alongside = 0, rs_after = 0;
  for (const auto& c : lora.cost.backward.collectives) {
    if (c.kind != CollectiveKind::kReduceScatter || c.dim != Dim::kTP) continue;
    (c.alongside ? rs_alongside : rs_after) += c.bytes;
  }
  EXPECT_DOUBLE_EQ(rs_alongside, 0.0);
  EXPECT_DOUBLE_EQ(rs_after, collective_load(full.cost.backward.collectives,
                                             CollectiveKind::kReduceScatter, Dim::kTP)
                                 .bytes);
  EXPECT_LT(lora.cost.backward.seconds, full.cost.backward.seconds);
}

// An adapter of rank 8 beside linear_qkv at tp 2: A, T x h by r / tp = 4; B, T x r by the
// rank's 3072 QKV outputs (16 query heads and 4 KV heads of 128); 2 T h r/tp + 2 T r qkv FLOPs
// forward, twice that backward. Calls: A's output gathered (T x r, BF16) forward, B's input
// gradient all-reduced backward (with SP, A's input gradient rides the norm's reduce-scatter).
TEST(Lora, QkvAdapterInClosedForm) {
  const Priced lora = priced(lora_plan(8));
  const double T = 4096, h = 4096, r = 8, qkv = 3072, e = 2;
  const double forward = 2 * T * h * r / 2 + 2 * T * r * qkv;
  EXPECT_DOUBLE_EQ(test::launched_flops(lora.cost.forward, "decoder.qkv_proj.lora_"), 32 * forward);
  EXPECT_DOUBLE_EQ(test::launched_flops(lora.cost.backward, "decoder.qkv_proj.lora_"),
                   32 * 2 * forward);
  const Priced full = priced(lora_plan(0));
  const auto after = [](const PassCost& p, CollectiveKind kind) {
    double bytes = 0;
    for (const auto& c : p.collectives) {
      if (c.kind == kind && c.dim == Dim::kTP && !c.alongside) bytes += c.bytes;
    }
    return bytes;
  };
  EXPECT_DOUBLE_EQ(after(lora.cost.forward, CollectiveKind::kAllGather) -
                       after(full.cost.forward, CollectiveKind::kAllGather),
                   32 * T * r * e);
  EXPECT_DOUBLE_EQ(after(lora.cost.backward, CollectiveKind::kAllReduce) -
                       after(full.cost.backward, CollectiveKind::kAllReduce),
                   32 * T * r * e);
}

// Beside the row-parallel linears (linear_proj, linear_fc2) B's output is gathered whole over
// TP forward (T x h) and, with SP, its gradient backward; A's output all-reduced (T x r).
TEST(Lora, RowParallelAdaptersGatherTheHiddenStates) {
  const Priced full = priced(lora_plan(0));
  const Priced lora = priced(lora_plan(8, kLoraProj | kLoraFc2));
  const double T = 4096, h = 4096, r = 8, e = 2;
  const auto load = [](const PassCost& p, CollectiveKind kind) {
    return collective_load(p.collectives, kind, Dim::kTP).bytes;
  };
  EXPECT_DOUBLE_EQ(load(lora.cost.forward, CollectiveKind::kAllGather) -
                       load(full.cost.forward, CollectiveKind::kAllGather),
                   32 * 2 * T * h * e);
  EXPECT_DOUBLE_EQ(load(lora.cost.forward, CollectiveKind::kAllReduce) -
                       load(full.cost.forward, CollectiveKind::kAllReduce),
                   32 * 2 * T * r * e);
  // Backward: the frozen model's two re-gathers a layer gone, the adapters' two gathers come;
  // the LM head's re-gather goes too.
  EXPECT_DOUBLE_EQ(load(full.cost.backward, CollectiveKind::kAllGather) -
                       load(lora.cost.backward, CollectiveKind::kAllGather),
                   T * h * e);
}

// Trainable parameters: per layer A (h x r/tp) and B (r x the rank's 3072 outputs), 32 layers;
// the model state holds the frozen weights alone (2 bytes) and the adapters' whole mixed-precision
// Adam state (2 + 4 + 4 + 8 bytes); the gradient reduction and the optimizer step cover them only.
TEST(Lora, OnlyTheAdaptersAreTrained) {
  const Priced full = priced(lora_plan(0));
  const Priced lora = priced(lora_plan(8));
  const std::int64_t adapters = 32 * (4096 * 8 / 2 + 8 * 3072);
  EXPECT_EQ(lora.cost.lora_params_per_gpu, adapters);
  EXPECT_EQ(lora.cost.params_per_gpu, full.cost.params_per_gpu);
  EXPECT_EQ(lora.cost.trained_params_per_gpu(), adapters);
  EXPECT_DOUBLE_EQ(lora.cost.grad_bytes, 4.0 * static_cast<double>(adapters));
  EXPECT_DOUBLE_EQ(lora.cost.embedding_sync_bytes, 0.0);
  EXPECT_DOUBLE_EQ(lora.cost.tp_sync_bytes, 0.0);
  const auto params = static_cast<double>(full.cost.params_per_gpu);
  const auto a = static_cast<double>(adapters);
  EXPECT_DOUBLE_EQ(lora.memory.state.weights, 2 * params + 2 * a);
  EXPECT_DOUBLE_EQ(lora.memory.state.gradients, 4 * a);
  EXPECT_DOUBLE_EQ(lora.memory.state.master_weights, 4 * a);
  EXPECT_DOUBLE_EQ(lora.memory.state.optimizer, 8 * a);
  const auto& adam = test::pass_kernel(lora.cost.optimizer, "optimizer.adam");
  EXPECT_EQ(std::get<MemoryShape>(adam.shape).cols, adapters);
}

// A stage without decoder layers (Megatron's layout "Et*32|L": the LM head and the loss alone)
// trains nothing under LoRA: no gradient to reduce, no optimizer state, the frozen weights alone.
TEST(Lora, AStageWithoutDecodersTrainsNothing) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan p = lora_plan(8);
  p.pp = 2;
  p.partition = "Et*32|L";
  const Partition part = build_partition(m, pf, p);
  const CostModel costs = compute_costs(m, pf, p, part);
  const StageCost& head = costs.stages.at(1);
  EXPECT_TRUE(head.lora);
  EXPECT_EQ(head.trained_params_per_gpu(), 0);
  EXPECT_GT(head.params_per_gpu, 0);
  EXPECT_DOUBLE_EQ(head.grad_bytes, 0.0);
  const StageMemory mem = compute_memory(m, pf, p, part, costs).stages.at(1);
  EXPECT_DOUBLE_EQ(mem.state.weights, 2.0 * static_cast<double>(head.params_per_gpu));
  EXPECT_DOUBLE_EQ(mem.state.gradients + mem.state.master_weights + mem.state.optimizer, 0.0);
  // The frozen LM head keeps no input (Megatron-Core's LinearWithFrozenWeight): of full
  // training's footprint there, one hidden state of the micro-batch's 4,096 tokens, split by SP.
  Plan full = p;
  full.lora_rank = 0;
  full.lora_target_modules = kLoraAllModules;
  const StageMemory trained =
      compute_memory(m, pf, full, part, compute_costs(m, pf, full, part)).stages.at(1);
  EXPECT_DOUBLE_EQ(trained.footprint.saved - mem.footprint.saved, 2.0 * 4096 * 4096 / 2);
  // Over two data-parallel replicas, with the distributed optimizer and both overlaps: the
  // decoders' stage reduces its adapters' gradients and gathers them back; the head's stage
  // calls nothing over DP (no zero-byte calls).
  p.dp = 2;
  p.gbs = 2;
  p.zero = 1;
  p.overlap_grad_reduce = p.overlap_param_gather = true;
  const CostModel replicated = compute_costs(m, pf, p, part);
  const TaskGraph g = build_task_graph(p, replicated);
  const Layout layout(p);
  for (std::int64_t r = 0; r < layout.world_size(); ++r) {
    std::int64_t dp_calls = 0;
    for (const Op& op : g.ranks[static_cast<std::size_t>(r)].ops) {
      dp_calls += op.type == OpType::kCollective &&
                  g.groups[static_cast<std::size_t>(op.group)].dim == Dim::kDP;
    }
    if (layout.coord(r, Dim::kPP) == 1) {
      EXPECT_EQ(dp_calls, 0) << r;
    } else {
      EXPECT_GT(dp_calls, 0) << r;
    }
  }
}

// Model FLOPs for TFLOP/s and MFU: a LoRA step counts two thirds of full training's (no weight
// gradients), as NVIDIA's benchmark READMEs count a LoRA run's MFU.
TEST(Lora, ModelFlopsCountTwoThirds) {
  const Model m = test::catalog_model("llama3.1-8b");
  EXPECT_DOUBLE_EQ(step_model_flops(m, lora_plan(8)), step_model_flops(m, lora_plan(0)) * 2 / 3);
  EXPECT_DOUBLE_EQ(step_model_flops(m, lora_plan(0)), model_flops_per_sample(m, 4096));
}

// Activations under LoRA: no frozen linear keeps its input for a weight gradient; an adapter
// keeps its own in BF16 (beside linear_proj and linear_fc2 the tensor the attention and the
// activation keep anyway). Per layer and micro-batch at tp 2 with SP, T = 4096 tokens, h = 4096,
// ffn 14336: what full training keeps as the four linears' inputs against what LoRA keeps.
TEST(Lora, FrozenLinearsKeepNoInputs) {
  const Model m = test::catalog_model("llama3.1-8b");
  const double T = 4096, h = 4096, f = 14336, t = 2;
  const double norm_output = T * h / t;  // split by SP
  const double act_output = T * f / t;   // split by TP
  for (Precision precision : {Precision::kBF16, Precision::kFP8}) {
    Plan full = lora_plan(0);
    full.precision = precision;
    const double in = precision == Precision::kFP8 ? 1 : 2;      // a GEMM input's bytes
    const double beside = precision == Precision::kFP8 ? 1 : 0;  // proj's FP8 copy
    const double v = 4096;                                       // the attention output's width
    const double full_linears = in * (2 * norm_output + act_output) + beside * T * v / t;
    const double base = layer_activations(m, full).saved - full_linears;
    for (auto [targets, kept] :
         {std::pair<std::uint32_t, double>{kLoraQkv, 2 * norm_output},
          std::pair<std::uint32_t, double>{kLoraProj, 0.0},
          std::pair<std::uint32_t, double>{kLoraFc1 | kLoraFc2, 2 * (norm_output + act_output)},
          std::pair<std::uint32_t, double>{kLoraAllModules, 2 * (2 * norm_output + act_output)}}) {
      Plan lora = lora_plan(8, targets);
      lora.precision = precision;
      EXPECT_DOUBLE_EQ(layer_activations(m, lora).saved, base + kept)
          << to_string(precision) << " " << lora_modules_text(targets);
    }
  }
}

// Under FP8 a frozen linear's input is cast for its forward GEMM alone: Transformer Engine
// leaves out the transpose only a weight gradient reads (3 bytes an element, not 4); the output
// gradient is still cast both ways (2.0 to 2.6 set both usages whatever the weight needs).
TEST(Lora, FrozenLinearsCastTheirInputsWithoutTransposes) {
  Plan full_plan = lora_plan(0);
  full_plan.precision = Precision::kFP8;
  Plan lora_fp8 = lora_plan(8);
  lora_fp8.precision = Precision::kFP8;
  const Priced full = priced(full_plan);
  const Priced lora = priced(lora_fp8);
  const auto op_of = [](const KernelCost& k) { return std::get<MemoryShape>(k.shape).op; };
  int casts = 0;
  for (const auto& k : full.cost.forward.kernels) {
    if (!k.name.ends_with(".fp8_cast")) continue;
    ++casts;
    EXPECT_EQ(op_of(k), "fp8_cast_transpose") << k.name;
    const KernelCost& frozen = test::pass_kernel(lora.cost.forward, k.name);
    EXPECT_EQ(op_of(frozen), "fp8_cast") << k.name;
    EXPECT_EQ(frozen.count, k.count) << k.name;
    EXPECT_DOUBLE_EQ(frozen.bytes, k.bytes * 3 / 4) << k.name;
  }
  EXPECT_EQ(casts, 4);  // qkv, proj, fc1, fc2
  for (const auto& k : lora.cost.backward.kernels) {
    if (k.name.ends_with("fp8_cast")) {
      EXPECT_EQ(op_of(k), "fp8_cast_transpose") << k.name;
    }
  }
}

// The adapter beside linear_qkv (tp 2): its output scaled by alpha / dim (a read and a write of
// T x the rank's 3072 outputs, as a copy) and added to the linear's; backward the scale again,
// and A's input gradient added to the linear's (T x h, BF16: 3 tensors of 2 bytes).
TEST(Lora, AdapterElementwiseInClosedForm) {
  const Priced lora = priced(lora_plan(8));
  const double T = 4096, h = 4096, qkv = 3072, e = 2;
  const auto shape = [](const KernelCost& k) { return std::get<MemoryShape>(k.shape); };
  const std::string a = "decoder.qkv_proj.lora";
  const KernelCost& scale = test::pass_kernel(lora.cost.forward, a + "_scale");
  EXPECT_EQ(shape(scale), (MemoryShape{"copy", 4096, 3072}));
  EXPECT_DOUBLE_EQ(scale.bytes, 2 * T * qkv * e);
  EXPECT_EQ(shape(test::pass_kernel(lora.cost.forward, a + "_add")),
            (MemoryShape{"add", 4096, 3072}));
  EXPECT_EQ(shape(test::pass_kernel(lora.cost.backward, a + "_scale.grad")),
            (MemoryShape{"copy", 4096, 3072}));
  const KernelCost& grad_add = test::pass_kernel(lora.cost.backward, a + "_input_grad_add");
  EXPECT_EQ(shape(grad_add), (MemoryShape{"add", 4096, 4096}));
  EXPECT_DOUBLE_EQ(grad_add.bytes, 3 * T * h * e);
  EXPECT_EQ(grad_add.count, 32);
}

}  // namespace
}  // namespace trainsim
