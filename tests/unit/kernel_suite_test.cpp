// Host side of the CUDA kernel suite: shapes from the catalog, grids, statistics, databases.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "kernels/host/database.hpp"
#include "kernels/host/shapes.hpp"
#include "kernels/host/stats.hpp"
#include "kernels/host/suite_run.hpp"
#include "sim/core/error.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/plan/partition.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

bool contains(const std::vector<KernelShape>& shapes, const KernelShape& s) {
  return std::find(shapes.begin(), shapes.end(), s) != shapes.end();
}

TEST(KernelSuiteStats, MedianAndPercentiles) {
  std::vector<double> x = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  const auto s = kernels::summarize(x);
  EXPECT_EQ(s.count, 10u);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.p10, 1.9);  // position 0.9 between the 1st and 2nd smallest
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(kernels::quantile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(kernels::quantile({4}, 0.9), 4);
  EXPECT_THROW(kernels::quantile({}, 0.5), std::invalid_argument);
  EXPECT_THROW(kernels::quantile({1, 2}, 1.5), std::invalid_argument);
}

TEST(KernelSuiteStats, RotatingSetsReadMoreThanL2) {
  const double MiB = 1024.0 * 1024.0, L2 = 50 * MiB, plenty = 1e12;
  EXPECT_EQ(kernels::rotating_sets(10 * MiB, L2, plenty), 10);  // 100 MiB = 2 x L2
  EXPECT_EQ(kernels::rotating_sets(30 * MiB, L2, plenty), 4);
  EXPECT_EQ(kernels::rotating_sets(200 * MiB, L2, plenty), 1);   // one set already exceeds L2
  EXPECT_EQ(kernels::rotating_sets(10 * MiB, L2, 35 * MiB), 3);  // what fits in the budget
  EXPECT_EQ(kernels::rotating_sets(1024, L2, plenty), 64);       // capped
  EXPECT_EQ(kernels::rotating_sets(10 * MiB, L2, 1 * MiB), 1);
}

TEST(KernelSuiteShapes, Llama8bAtTp2) {
  const Model m = test::catalog_model("llama3.1-8b");
  const auto shapes = kernels::model_shapes(m, 2, 1, 8192, Precision::kBF16);
  // QKV: [8192 x 4096] @ [4096 x (2048 + 2 x 512)]; its data and weight gradients.
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 3072, 4096}));
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 4096, 3072}));
  EXPECT_TRUE(contains(shapes, GemmShape{4096, 3072, 8192}));
  // Output projection, gated MLP up (gate and up: 2 x 14336 / 2), down, LM head (128256 / 2).
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 4096, 2048}));
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 14336, 4096}));
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 4096, 7168}));
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 64128, 4096}));
  EXPECT_TRUE(contains(shapes, AttentionShape{1, 8192, 16, 4, 128, true, AttentionPass::kForward}));
  EXPECT_TRUE(
      contains(shapes, AttentionShape{1, 8192, 16, 4, 128, true, AttentionPass::kBackward}));
  EXPECT_TRUE(contains(shapes, MemoryShape{"rmsnorm", 8192, 4096}));
  EXPECT_TRUE(contains(shapes, MemoryShape{"swiglu.grad", 8192, 7168}));
  EXPECT_TRUE(contains(shapes, MemoryShape{"rope", 8192, 2048 + 512}));
  EXPECT_TRUE(contains(shapes, MemoryShape{"cross_entropy", 8192, 64128}));
  const auto n_gemm = std::count_if(shapes.begin(), shapes.end(), [](const KernelShape& s) {
    return std::holds_alternative<GemmShape>(s);
  });
  EXPECT_EQ(n_gemm, 15);  // five GEMMs, each forward, data gradient and weight gradient
  const auto fp8 = kernels::model_shapes(m, 2, 1, 8192, Precision::kFP8);
  EXPECT_TRUE(contains(fp8, GemmShape{8192, 3072, 4096, DType::kFP8}));
}

// The data gradient in the nn layout, the weight gradient in nt: Llama 3.1 8B's QKV projection
// at TP 2 (its forward GEMM is {8192, 3072, 4096} tn).
TEST(KernelSuiteShapes, GradientLayouts) {
  const Model m = test::catalog_model("llama3.1-8b");
  const auto laid = kernels::model_layout_gemms(m, 2, 1, 8192);
  EXPECT_TRUE(contains(laid, GemmShape{8192, 4096, 3072, DType::kBF16, 1, GemmLayout::kNN}));
  EXPECT_TRUE(contains(laid, GemmShape{4096, 3072, 8192, DType::kBF16, 1, GemmLayout::kNT}));
  EXPECT_FALSE(contains(laid, GemmShape{8192, 3072, 4096, DType::kBF16, 1, GemmLayout::kNN}));
  EXPECT_EQ(laid.size(), 10u);  // five GEMMs' data and weight gradients
  for (const auto& s : laid) EXPECT_NE(std::get<GemmShape>(s).layout, GemmLayout::kTN);
}

// The weight gradients accumulating into FP32: Llama 3.1 8B at TP 2 and 8192 tokens has five
// weight-gradient GEMMs (QKV, output, gate and up, down, LM head), the forward's {m, n, k}
// turned to {k, n, m}; the suite times them beside their plain twins.
TEST(KernelSuiteShapes, AccumulatingWeightGradients) {
  const Model m = test::catalog_model("llama3.1-8b");
  const auto acc = kernels::model_accumulating_gemms(m, 2, 1, 8192, Precision::kFP8);
  EXPECT_EQ(acc.size(), 5u);
  EXPECT_TRUE(contains(acc, GemmShape{4096, 3072, 8192, DType::kFP8, 1, GemmLayout::kTN, true}));
  // The LM head stays BF16 in an FP8 run (Megatron-Core's output layer).
  EXPECT_TRUE(contains(acc, GemmShape{4096, 64128, 8192, DType::kBF16, 1, GemmLayout::kTN, true}));
  for (const auto& s : acc) EXPECT_TRUE(std::get<GemmShape>(s).accumulate);
  // An MoE model's: the experts' and attention's, not the router's (4096 x 128, its weight
  // outside the fused linear layers).
  const auto moe = kernels::model_accumulating_gemms(test::catalog_model("qwen3-30b-a3b"), 1, 1,
                                                     4096, Precision::kBF16);
  EXPECT_FALSE(moe.empty());
  EXPECT_FALSE(contains(moe, GemmShape{2048, 128, 4096, DType::kBF16, 1, GemmLayout::kTN, true}));
  kernels::SuiteOptions opt;
  opt.tps = {2};
  opt.gemm_seqs = {8192};
  const auto all = kernels::suite_shapes({m}, opt);
  for (const auto& s : acc) EXPECT_TRUE(contains(all, s));
  // The grid at powers of two, in both element types: 6^3 each.
  EXPECT_TRUE(contains(all, GemmShape{512, 16384, 1024, DType::kBF16, 1, GemmLayout::kTN, true}));
  opt.accumulating_wgrads = false;
  const auto without = kernels::suite_shapes({m}, opt);
  for (const auto& s : without) {
    const auto* g = std::get_if<GemmShape>(&s);
    EXPECT_TRUE(g == nullptr || !g->accumulate);
  }
  kernels::SuiteRun run;
  run.shapes = opt;
  run.accumulating_only = true;
  const auto only = kernels::selected_shapes(run, all);
  EXPECT_EQ(only.size(), all.size() - without.size());
  run.accumulating_only = false;
  run.accumulating_twins = true;
  const auto twins = kernels::selected_shapes(run, all);
  ASSERT_EQ(twins.size(), only.size());
  for (std::size_t i = 0; i < twins.size(); ++i) {
    auto g = std::get<GemmShape>(only[i]);
    g.accumulate = false;
    EXPECT_EQ(twins[i], KernelShape(g));
  }
}

TEST(KernelSuiteShapes, TpFeasibility) {
  const Model m = test::catalog_model("llama3.1-8b");
  EXPECT_TRUE(kernels::tp_feasible(m, 8));
  EXPECT_FALSE(kernels::tp_feasible(m, 3));   // 32 heads
  EXPECT_FALSE(kernels::tp_feasible(m, 16));  // 8 KV heads
}

// A database measured on the suite's shapes hits every kernel the cost model produces, GEMMs
// included, for every catalog model at TP 1, 2, 4 and 8.
TEST(KernelSuiteShapes, EnumerationMatchesTheCostModel) {
  std::vector<Model> models;
  for (const auto& name :
       {"llama2-7b", "llama2-70b", "llama3-8b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b",
        "mixtral-8x7b", "gpt3-175b", "nemotron4-15b", "nemotron4-340b"}) {
    models.push_back(test::catalog_model(name));
  }
  const kernels::SuiteOptions opt;
  const auto suite = kernels::suite_shapes(models, opt);
  std::set<std::string> keys;
  for (const auto& s : suite) EXPECT_TRUE(keys.insert(exact_key(s)).second) << exact_key(s);
  const Platform pf = test::catalog_platform("a100-sxm-hdr");
  int gemms = 0;
  for (const auto& m : models) {
    for (std::int64_t tp : {1, 2, 4, 8}) {
      ASSERT_TRUE(kernels::tp_feasible(m, tp)) << m.name << " " << tp;
      for (auto precision : {Precision::kBF16, Precision::kFP8}) {
        Plan p;
        p.tp = tp;
        p.seq_len = 4096;
        p.precision = precision;
        const auto cm = compute_costs(m, pf, p, test::uniform_partition(m, 1));
        std::set<std::string> from_cost;
        for (const auto* pass : {&cm.stages[0].forward, &cm.stages[0].backward}) {
          for (const auto& k : pass->kernels) {
            EXPECT_TRUE(keys.count(exact_key(k.shape))) << m.name << " tp " << tp << ": " << k.name;
            if (std::holds_alternative<GemmShape>(k.shape)) from_cost.insert(exact_key(k.shape));
          }
        }
        std::set<std::string> enumerated;
        for (const auto& s : kernels::model_shapes(m, tp, 1, 4096, precision)) {
          if (std::holds_alternative<GemmShape>(s)) enumerated.insert(exact_key(s));
        }
        EXPECT_EQ(enumerated, from_cost) << m.name << " tp " << tp;
        gemms += static_cast<int>(from_cost.size());
      }
    }
  }
  EXPECT_GT(gemms, 1000);
}

TEST(KernelSuiteShapes, Grids) {
  EXPECT_EQ(kernels::pow2_grid(512, 4096), (std::vector<std::int64_t>{512, 1024, 2048, 4096}));
  EXPECT_THROW(kernels::pow2_grid(500, 4096), std::invalid_argument);
  EXPECT_THROW(kernels::pow2_grid(4096, 512), std::invalid_argument);
  EXPECT_EQ(kernels::octave_grid(512, 4096, 2),
            (std::vector<std::int64_t>{512, 768, 1024, 1536, 2048, 3072, 4096}));
  EXPECT_EQ(kernels::octave_grid(512, 4096, 1), kernels::pow2_grid(512, 4096));
  EXPECT_THROW(kernels::octave_grid(512, 4096, 3), std::invalid_argument);
  kernels::SuiteOptions opt;
  opt.gemm_grid_lo = 1024;
  opt.gemm_grid_hi = 4096;
  opt.moe_etps = {};  // no MoE layers
  const auto shapes = kernels::suite_shapes({}, opt);
  const auto gemm = kernels::filter_ops(shapes, {"gemm"});
  // {1024, 1536, 2048, 3072, 4096}^3 in BF16 and in FP8 (tn), and in BF16 nn and nt; and,
  // accumulating into FP32, {1024, 2048, 4096}^3 in each element type
  EXPECT_EQ(gemm.size(), 4u * 125u + 2u * 27u);
  EXPECT_TRUE(contains(gemm, GemmShape{1024, 4096, 2048, DType::kFP8, 1, GemmLayout::kTN, true}));
  EXPECT_FALSE(contains(gemm, GemmShape{1536, 4096, 2048, DType::kFP8, 1, GemmLayout::kTN, true}));
  EXPECT_TRUE(contains(gemm, GemmShape{1536, 4096, 3072, DType::kFP8}));
  EXPECT_TRUE(contains(gemm, GemmShape{1536, 4096, 3072, DType::kBF16, 1, GemmLayout::kNT}));
  EXPECT_FALSE(contains(gemm, GemmShape{1536, 4096, 3072, DType::kFP8, 1, GemmLayout::kNN}));
  opt.bf16_layouts = false;
  EXPECT_EQ(kernels::filter_ops(kernels::suite_shapes({}, opt), {"gemm"}).size(),
            2u * 125u + 2u * 27u);
  opt.bf16_layouts = true;
  EXPECT_TRUE(kernels::filter_ops(shapes, {"grouped_gemm"}).empty());
  const auto mem = kernels::filter_ops(shapes, {"memory"});
  const auto suite_ops = std::count_if(memory_ops().begin(), memory_ops().end(),
                                       [](const MemoryOp& op) { return op.in_suite; });
  // 2^16 to 2^28 elements: 13 shapes an op, the two routers' at each of six widths (experts)
  EXPECT_EQ(mem.size(), static_cast<std::size_t>(suite_ops - 2) * 13u + 2u * 6u * 13u);
  EXPECT_FALSE(contains(mem, MemoryShape{"scale_mask_softmax", 256, 4096}));  // not timed
  EXPECT_TRUE(contains(mem, MemoryShape{"fp8_cast_transpose", 256, 4096}));
  EXPECT_TRUE(contains(mem, MemoryShape{"moe_router", 8192, 8}));
  EXPECT_TRUE(contains(mem, MemoryShape{"moe_router.grad", 256, 256}));
  EXPECT_FALSE(contains(mem, MemoryShape{"moe_router", 16, 4096}));
  EXPECT_TRUE(contains(mem, MemoryShape{"moe_unpermute.grad", 16, 4096}));
  EXPECT_TRUE(contains(mem, MemoryShape{"adam", 1, 1 << 20}));
  EXPECT_TRUE(contains(mem, MemoryShape{"rmsnorm", 256, 4096}));
  // MHA at head sizes 64, 128, 192, 256 x 8, 16, 32 heads x 6 sequences, causal and not, both
  // passes (288), and FlashAttention's harness shapes at head sizes 64, 128, 256 (72), 12 of
  // which the grid already holds (batch 1 at 16k: 32 heads of 64, 16 of 128, 8 of 256).
  const auto attention = kernels::filter_ops(shapes, {"attention"});
  EXPECT_EQ(attention.size(), 288u + 72u - 12u);
  EXPECT_TRUE(contains(attention, AttentionShape{1, 8192, 16, 16, 256, true,
                                                 AttentionPass::kBackward, DType::kBF16}));
  EXPECT_TRUE(contains(attention, AttentionShape{32, 512, 32, 32, 64, false,
                                                 AttentionPass::kBackward, DType::kBF16}));
  EXPECT_TRUE(contains(attention, AttentionShape{1, 32768, 8, 8, 192, false,
                                                 AttentionPass::kForward, DType::kBF16}));
}

// An MoE layer's experts as grouped GEMMs: experts / ep groups of tokens x topk x ep / experts
// tokens each; gate and up fused (2 x ffn / etp wide), then down.
TEST(KernelSuiteShapes, MoeExpertGemms) {
  const kernels::MoeExperts mixtral{"mixtral-8x7b", 4096, 14336, 8, 2, "test"};
  const auto s = kernels::moe_expert_shapes(mixtral, 2, 1, 4096, DType::kBF16);
  const std::vector<KernelShape> want = {
      GemmShape{2048, 28672, 4096, DType::kBF16, 4}, GemmShape{2048, 4096, 28672, DType::kBF16, 4},
      GemmShape{4096, 28672, 2048, DType::kBF16, 4}, GemmShape{2048, 4096, 14336, DType::kBF16, 4},
      GemmShape{2048, 14336, 4096, DType::kBF16, 4}, GemmShape{14336, 4096, 2048, DType::kBF16, 4}};
  EXPECT_EQ(s, want);
  // DeepSeek-V3 at EP 64 (its DGX Cloud recipe): 4 local experts of 8192 tokens at 4096 tokens
  // per GPU; at expert tensor parallelism 4 the expert width splits.
  const auto& ds = kernels::published_moe_layers().front();
  EXPECT_EQ(ds.name, "deepseek-v3");
  EXPECT_EQ(kernels::moe_expert_shapes(ds, 64, 1, 4096, DType::kFP8).front(),
            KernelShape(GemmShape{8192, 4096, 7168, DType::kFP8, 4}));
  EXPECT_EQ(kernels::moe_expert_shapes(ds, 64, 4, 4096, DType::kFP8).front(),
            KernelShape(GemmShape{8192, 1024, 7168, DType::kFP8, 4}));
  // One local expert: plain GEMMs. Splits that do not divide: nothing.
  EXPECT_EQ(kernels::moe_expert_shapes(mixtral, 8, 1, 4096, DType::kBF16).front(),
            KernelShape(GemmShape{8192, 28672, 4096}));
  EXPECT_TRUE(kernels::moe_expert_shapes(mixtral, 3, 1, 4096, DType::kBF16).empty());
  EXPECT_TRUE(kernels::moe_expert_shapes(mixtral, 2, 3, 4096, DType::kBF16).empty());
  // Asked for, each weight gradient also accumulating into FP32, after its linear's three.
  const auto acc = kernels::moe_expert_shapes(mixtral, 2, 1, 4096, DType::kBF16, true);
  ASSERT_EQ(acc.size(), 8u);
  EXPECT_EQ(acc[3],
            KernelShape(GemmShape{4096, 28672, 2048, DType::kBF16, 4, GemmLayout::kTN, true}));
  EXPECT_EQ(acc[7],
            KernelShape(GemmShape{14336, 4096, 2048, DType::kBF16, 4, GemmLayout::kTN, true}));
  // The suite: every MoE layer, both element types, 1 to 32 local experts.
  kernels::SuiteOptions opt;
  const auto grouped = kernels::filter_ops(kernels::suite_shapes({}, opt), {"grouped_gemm"});
  EXPECT_TRUE(contains(grouped, GemmShape{8192, 4096, 7168, DType::kFP8, 4}));
  for (const auto& g : grouped) {
    const auto& gs = std::get<GemmShape>(g);
    EXPECT_GE(gs.groups, 2);
    EXPECT_LE(gs.groups, opt.moe_max_groups);
  }
}

// Off-grid shapes: the same ones on every machine, between the grid points, in range.
TEST(KernelSuiteShapes, OffGridShapes) {
  const kernels::SuiteOptions opt;
  const auto a = kernels::offgrid_shapes(opt, 5, 7), b = kernels::offgrid_shapes(opt, 5, 7);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, kernels::offgrid_shapes(opt, 5, 8));
  std::size_t gemms = 0;
  for (const auto& s : a) {
    if (const auto* g = std::get_if<GemmShape>(&s)) {
      ++gemms;
      for (auto x : {g->m, g->n, g->k}) {
        EXPECT_EQ(x % 128, 0);
        EXPECT_GE(x, 512);
        EXPECT_LE(x, 16384);
      }
    } else if (const auto* at = std::get_if<AttentionShape>(&s)) {
      EXPECT_EQ(at->seq % 256, 0);
      EXPECT_GE(at->seq, 1024);
      EXPECT_LE(at->seq, 32768);
    } else {
      const auto& m = std::get<MemoryShape>(s);
      EXPECT_EQ(m.cols % 8, 0);  // the memory-bound kernels' vector width
      const MemoryOp& op = *find_memory_op(m.op);
      EXPECT_EQ(m.rows % op.row_multiple, 0) << m.op;  // whole tokens of top-8 rows
      if (m.op.rfind("moe_router", 0) == 0) {
        EXPECT_GE(m.cols, 8);  // between the narrowest and widest router measured
        EXPECT_LE(m.cols, 256);
      }
    }
  }
  EXPECT_EQ(gemms, 10u);  // 5 per element type
}

// What a run times: the selected ops, at most N per kernel family, launches sized to the time
// aimed at per shape.
TEST(KernelSuiteRun, SelectionAndRepetitions) {
  kernels::SuiteRun run;
  const auto all = kernels::suite_shapes({test::catalog_model("mixtral-8x7b")}, run.shapes);
  run.ops = {"grouped_gemm", "attention"};
  run.max_shapes_per_family = 1;
  const auto some = kernels::selected_shapes(run, all);
  std::set<std::string> families;
  const KernelDatabase any;
  for (const auto& s : some) {
    EXPECT_TRUE(families.insert(any.family_key(s)).second) << shape_label(s);
    EXPECT_NE(op_name(s), "gemm");
  }
  // grouped GEMMs: 2 element types x the group counts 2 to 32, plain and accumulating into FP32
  // (the weight gradients), and the cost model's own grouped data and weight gradients of
  // Mixtral's 8 local experts (at EP 1) in the nn and nt layouts; attention: 2 passes x head
  // sizes 64, 128, 192, 256 x causal or not
  EXPECT_EQ(families.count("grouped_gemm/fp8/g32"), 1u);
  EXPECT_EQ(families.count("attention/bwd/bf16/d192/full"), 1u);
  EXPECT_EQ(families.count("grouped_gemm/bf16/nt/g8"), 1u);
  EXPECT_EQ(families.count("grouped_gemm/fp8/acc/g4"), 1u);
  EXPECT_EQ(some.size(), 2u * 2u * 5u + 2u + 2u * 4u * 2u);
  run.max_shapes = 3;
  EXPECT_EQ(kernels::selected_shapes(run, all).size(), 3u);

  run.repetitions = 50;
  run.min_repetitions = 10;
  run.time_per_shape = 0.2;
  EXPECT_EQ(kernels::repetitions_for(run, 1e-3), 50);  // 200 launches wanted, 50 at most
  EXPECT_EQ(kernels::repetitions_for(run, 8e-3), 25);  // 0.2 s of 8 ms launches
  EXPECT_EQ(kernels::repetitions_for(run, 0.1), 10);   // at least 10
  EXPECT_EQ(kernels::repetitions_for(run, 0.0), 50);   // no warm-up timing: the most
  run.min_repetitions = 80;                            // clamped to the most
  EXPECT_EQ(kernels::repetitions_for(run, 0.1), 50);
}

TEST(KernelSuiteRun, ShapesAsJson) {
  const auto j = nlohmann::json::parse(kernels::shapes_json(
      {GemmShape{64, 128, 256, DType::kFP8, 2},
       AttentionShape{1, 4096, 8, 2, 128, false, AttentionPass::kBackward, DType::kBF16}}));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0], nlohmann::json::parse(R"({"op": "grouped_gemm", "dtype": "fp8", "groups": 2,
                                            "m": 64, "n": 128, "k": 256})"));
  EXPECT_EQ(j[1]["pass"], "bwd");
  EXPECT_EQ(j[1]["kv_heads"], 2);
  EXPECT_EQ(j[1]["causal"], false);
}

// A run's database: timed shapes in order, kept entries of a resumed run, failures as notes
// (never as entries), ceilings from the entries.
TEST(KernelSuiteDatabase, RunDatabase) {
  const GemmShape timed{1024, 1024, 1024}, failed{2048, 1024, 1024}, resumed{4096, 1024, 1024};
  const MemoryShape copy{"copy", 1, 1 << 20};
  kernels::RunResults r;
  r.samples[shape_label(timed)] = {2e-6, 1e-6, 3e-6};
  r.sources[shape_label(timed)] = "cublaslt algo 0";
  r.samples[shape_label(copy)] = {1e-3};
  r.failures = {shape_label(failed) + ": relative error 0.5 against the reference"};
  r.kept[shape_label(resumed)] = kernels::measured_entry(resumed, {4e-6});
  KernelDbMeta meta;
  meta.gpu_name = "GPU";
  const auto db = kernels::run_database(meta, {timed, failed, copy}, r);
  ASSERT_EQ(db.entries().size(), 3u);
  EXPECT_EQ(db.entries()[0].shape, KernelShape(timed));
  EXPECT_EQ(db.entries()[0].source, "cublaslt algo 0");
  EXPECT_DOUBLE_EQ(db.entries()[0].median_s, 2e-6);
  EXPECT_EQ(db.entries()[1].shape, KernelShape(copy));
  EXPECT_EQ(db.entries()[2].shape, KernelShape(resumed));  // kept, though not selected
  // Interpolated between 1024 and 4096, not measured.
  EXPECT_EQ(db.lookup(failed)->match, KernelDbMatch::kInterpolated);
  EXPECT_EQ(db.meta().notes, (std::vector<std::string>{
                                 "not timed, failed its check: gemm bf16 m=2048 n=1024 k=1024: "
                                 "relative error 0.5 against the reference"}));
  // 2 x 4096 x 1024 x 1024 FLOPs in 4 us is the best plain-GEMM rate; 2^20 x 4 bytes in 1 ms.
  EXPECT_NEAR(*db.meta().gemm_bf16_tflops, 2.0 * 4096 * 1024 * 1024 / 4e-6 / 1e12, 1e-9);
  EXPECT_NEAR(*db.meta().copy_GBps, 4.0 * (1 << 20) / 1e-3 / 1e9, 1e-9);
  EXPECT_FALSE(db.meta().gemm_fp8_tflops);
  EXPECT_EQ(kernels::kept_entries(db).count(shape_label(resumed)), 1u);
}

TEST(KernelSuiteDatabase, EntriesAndMerge) {
  const auto e = kernels::measured_entry(GemmShape{1024, 1024, 1024}, {3e-6, 1e-6, 2e-6});
  EXPECT_DOUBLE_EQ(e.median_s, 2e-6);
  EXPECT_DOUBLE_EQ(*e.p10_s, 1.2e-6);
  EXPECT_DOUBLE_EQ(*e.p90_s, 2.8e-6);
  EXPECT_EQ(*e.repetitions, 3);

  KernelDbMeta meta;
  meta.gpu_name = "GPU A";
  meta.date = "d";
  auto other = e;
  other.median_s = 5e-6;
  const KernelDatabase a(KernelDbKind::kMeasured, meta,
                         {e, kernels::measured_entry(MemoryShape{"copy", 1, 1 << 20}, {1e-5})});
  KernelDbMeta meta_b = meta;
  meta_b.copy_GBps = 2800;
  meta_b.date = "e";
  meta_b.cudnn = "9.19.0";
  meta_b.notes = {"from b"};
  KernelDbMeta meta_a = meta;
  meta_a.copy_GBps = 2700;
  meta_a.cudnn = "9.14.0";
  meta_a.notes = {"from a"};
  const KernelDatabase a2(KernelDbKind::kMeasured, meta_a, a.entries());
  const KernelDatabase b(KernelDbKind::kMeasured, meta_b, {other});
  const auto merged = kernels::merge_databases({a2, b, b});
  ASSERT_EQ(merged.entries().size(), 2u);
  EXPECT_DOUBLE_EQ(merged.lookup(GemmShape{1024, 1024, 1024})->seconds, 5e-6);  // b replaces a
  EXPECT_DOUBLE_EQ(*merged.meta().copy_GBps, 2800);                             // the best ceiling
  EXPECT_EQ(merged.meta().date, "d; e");  // each distinct value once
  EXPECT_EQ(merged.meta().cudnn, "9.14.0; 9.19.0");
  EXPECT_EQ(merged.meta().notes, (std::vector<std::string>{"from a", "from b"}));
  KernelDbMeta meta_c = meta;
  meta_c.gpu_name = "GPU C";
  EXPECT_THROW(kernels::merge_databases({a, KernelDatabase(KernelDbKind::kMeasured, meta_c, {})}),
               InputError);
}

}  // namespace
}  // namespace trainsim
