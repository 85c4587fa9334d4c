// Expert parallelism: Megatron-Core's rules, where the expert and expert-data-parallel groups
// lie, the busiest GPU's load, what a GPU computes and sends in an MoE layer (closed forms), its
// expert weights and state in memory, and the expert gradients' own reduction.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "sim/cost/stage_cost.hpp"
#include "sim/graph/builder.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/layout.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan ep_plan(std::int64_t tp, std::int64_t dp, std::int64_t ep, std::int64_t etp = 0) {
  Plan p;
  p.tp = tp;
  p.sp = tp > 1;
  p.dp = dp;
  p.ep = ep;
  p.etp = etp;
  p.gbs = dp;
  p.seq_len = 4096;
  return p;
}

using Ranks = std::vector<std::int64_t>;

TEST(ExpertParallel, MegatronRulesOneLineEach) {
  const Model m = test::catalog_model("mixtral-8x7b");  // 8 experts
  EXPECT_EQ(test::plan_error(ep_plan(1, 8, 8), m), "(valid)");
  EXPECT_EQ(test::plan_error(ep_plan(1, 6, 3), m),
            "--ep: must divide the number of experts (8), got 3");
  // etp = tp: EP re-divides dp x cp only.
  EXPECT_EQ(test::plan_error(ep_plan(2, 2, 4), m),
            "--ep: ep x etp = 4 x 2 must divide tp x cp x dp = 2 x 1 x 2 = 4 (with etp = tp: ep "
            "must divide dp x cp = 2)");
  EXPECT_EQ(test::plan_error(ep_plan(2, 2, 4, 1), m), "(valid)");  // etp 1: EP over tp x dp
  // Expert TP between 1 and tp: the 8 ranks re-divided as etp 2 x ep 2 x edp 2.
  EXPECT_EQ(test::plan_error(ep_plan(4, 2, 2, 2), m), "(valid)");
  EXPECT_EQ(test::plan_error(ep_plan(4, 2, 8, 2), m),
            "--ep: ep x etp = 8 x 2 must divide tp x cp x dp = 4 x 1 x 2 = 8");
  EXPECT_EQ(test::plan_error(ep_plan(4, 2, 2, 3), m),
            "--etp: must divide the expert FFN hidden size (14336), got 3");
  Plan no_sp = ep_plan(2, 4, 4);
  no_sp.sp = false;
  EXPECT_EQ(test::plan_error(no_sp, m),
            "--sp: expert parallelism with --tp 2 needs --sp (sequence parallelism), as in "
            "Megatron-LM");
  Plan no_sp_no_ep = ep_plan(2, 4, 1);
  no_sp_no_ep.sp = false;
  EXPECT_EQ(test::plan_error(no_sp_no_ep, m),
            "--sp: a mixture-of-experts model with --tp 2 needs --sp (sequence parallelism): "
            "Megatron-Core refuses to train MoE layers under tensor parallelism without it");
  Plan overlap = ep_plan(1, 8, 1);
  overlap.moe_a2a_overlap = true;
  EXPECT_EQ(test::plan_error(overlap, m),
            "--overlap-moe-expert-parallel-comm: overlaps the expert all-to-alls: needs --ep > 1 "
            "and the alltoall dispatcher");
  Plan skew = ep_plan(1, 8, 8);
  skew.moe_imbalance = 4.5;  // at most 8 / 2: every token's two experts
  EXPECT_EQ(test::plan_error(skew, m),
            "--moe-imbalance: must be in [1, experts / top-k = 4], got 4.5");
  Plan order = ep_plan(2, 4, 2);
  order.rank_order = *parse_rank_order("tp-cp-ep-pp-dp");
  order.pp = 2;
  order.gbs = 8;
  EXPECT_EQ(test::plan_error(order, m),
            "--rank-order: puts pipeline stages on different GPUs in the dense and the expert "
            "layers (tp-cp-ep-pp-dp); Megatron-Core requires the same pipeline groups: use "
            "tp-cp-ep-dp-pp");
  const Model dense = test::catalog_model("llama3.1-8b");
  EXPECT_EQ(test::plan_error(ep_plan(1, 8, 2), dense),
            "--ep: expert parallelism applies to mixture-of-experts models; llama3.1-8b is dense");
}

// Megatron-Core's rules (TransformerConfig) on what runs again beside the experts: the all-to-all
// overlap without full recomputation, without the MoE layer recomputed and with at most one
// multi-token-prediction module; moe_act recomputed only on grouped expert GEMMs.
TEST(ExpertParallel, OverlapAndRecomputationAsMegatronCoreAllowsThem) {
  const Model m = test::catalog_model("mixtral-8x7b");
  Plan overlap = ep_plan(1, 8, 8);
  overlap.moe_a2a_overlap = true;
  EXPECT_EQ(test::plan_error(overlap, m), "(valid)");
  Plan full = overlap;
  full.recompute = Recompute::kFull;
  EXPECT_EQ(test::plan_error(full, m),
            "--overlap-moe-expert-parallel-comm: cannot run with --recompute full (Megatron-Core: "
            "disable full recomputation when enabling overlap_moe_expert_parallel_comm)");
  Plan moe = overlap;
  moe.recompute = Recompute::kSelective;
  moe.recompute_modules = kRecomputeMoeAct | kRecomputeMoe;
  EXPECT_EQ(test::plan_error(moe, m),
            "--recompute-modules: moe cannot be recomputed with --overlap-moe-expert-parallel-comm "
            "(Megatron-Core: the recomputed MoE layer runs its dispatch again)");
  moe.recompute_modules = kRecomputeMoeAct;
  EXPECT_EQ(test::plan_error(moe, m), "(valid)");
  moe.moe_grouped_gemm = false;
  EXPECT_EQ(test::plan_error(moe, m),
            "--recompute-modules: moe_act needs the grouped expert GEMMs (Megatron-Core), not "
            "sequential experts (--no-moe-grouped-gemm)");
  Model two_mtp = m;
  two_mtp.mtp_layers = 2;
  EXPECT_EQ(test::plan_error(overlap, two_mtp),
            "--overlap-moe-expert-parallel-comm: takes at most one multi-token-prediction module "
            "(Megatron-Core), the model has 2");
  two_mtp.mtp_layers = 1;
  EXPECT_EQ(test::plan_error(overlap, two_mtp), "(valid)");
}

// Megatron-Core's expert rank generator: etp x ep x edp x pp in the order tp-cp-ep-dp-pp.
TEST(ExpertParallel, GroupsAsMegatronCoreGeneratesThem) {
  const Layout a(ep_plan(1, 8, 2));  // EP pairs, expert data parallelism over the rest
  EXPECT_EQ(a.size(Dim::kEP), 2);
  EXPECT_EQ(a.group(Dim::kEP, 3), (Ranks{2, 3}));
  EXPECT_EQ(a.collective_group(Dim::kEDP, 3), (Ranks{1, 3, 5, 7}));
  EXPECT_EQ(a.collective_group(Dim::kDP, 3), (Ranks{0, 1, 2, 3, 4, 5, 6, 7}));
  const Layout b(ep_plan(2, 8, 4));  // etp = tp: EP strides over TP groups
  EXPECT_EQ(b.group(Dim::kEP, 1), (Ranks{1, 3, 5, 7}));
  EXPECT_EQ(b.collective_group(Dim::kEDP, 1), (Ranks{1, 9}));
  const Layout c(ep_plan(2, 4, 8, 1));  // etp 1: EP spans the TP groups
  EXPECT_EQ(c.group(Dim::kEP, 5), (Ranks{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(c.collective_size(Dim::kEDP), 1);  // every expert on one GPU only
  const Layout dense(ep_plan(2, 4, 1));        // no EP: experts reduce with the dense weights
  EXPECT_EQ(dense.collective_size(Dim::kEDP), 1);
  // The stage's EP groups, by their lowest rank, are the leader's moved by these offsets.
  Plan staged = ep_plan(1, 4, 2);
  staged.pp = 2;
  const Layout d(staged);
  EXPECT_EQ(d.groups_in_stage(Dim::kEP, 1), (std::vector<Ranks>{{4, 5}, {6, 7}}));
  EXPECT_EQ(d.groups_in_stage(Dim::kEDP, 1), (std::vector<Ranks>{{4, 6}, {5, 7}}));
  EXPECT_EQ(d.offset_residues({Dim::kEP}, 64), (Ranks{0, 2}));
}

TEST(ExpertParallel, BusiestGpuLoadInClosedForm) {
  EXPECT_DOUBLE_EQ(expert_rank_load(8, 1, 1.0, 0), 1.0);
  EXPECT_DOUBLE_EQ(expert_rank_load(8, 1, 2.0, 0), 2.0);  // one expert per GPU
  EXPECT_DOUBLE_EQ(expert_rank_load(8, 8, 3.0, 0), 1.0);  // all experts on every GPU
  EXPECT_DOUBLE_EQ(expert_rank_load(8, 2, 2.0, 0), (2.0 + 6.0 / 7.0) / 2.0);
  EXPECT_DOUBLE_EQ(expert_rank_load(8, 1, 2.0, 1.25), 1.25);  // capped, the rest dropped
  EXPECT_DOUBLE_EQ(expert_rank_load(64, 4, 1.0, 0.5), 0.5);   // below the mean: all capped
}

double flops_of(const BlockPass& p, const std::string& prefix) {
  double f = 0;
  for (const auto& k : p.kernels) {
    if (k.name.starts_with(prefix)) f += k.flops * static_cast<double>(k.launches);
  }
  return f;
}

// Mixtral 8x7b, EP 8 on one node (Megatron-LM's MoE layer benchmark): each GPU routes its
// 4,096 tokens to 2 experts and computes its one expert's 8,192 rows.
TEST(ExpertParallel, MoeLayerWorkAndTrafficInClosedForm) {
  const Model m = test::catalog_model("mixtral-8x7b");
  Plan p = ep_plan(1, 8, 8);
  const double T = 4096, h = 4096, f = 14336, k = 2;
  const LayerShape s = layer_shape(m, p, 32000);
  const BlockPass fwd = block_pass(BlockKind::kDecoder, false, s);
  EXPECT_DOUBLE_EQ(flops_of(fwd, "expert_"), 2.0 * T * k * h * f * 3.0);
  EXPECT_DOUBLE_EQ(flops_of(fwd, "router"), 2.0 * T * h * 8);
  const auto up = std::find_if(fwd.kernels.begin(), fwd.kernels.end(),
                               [](const KernelSpec& x) { return x.name == "expert_up"; });
  ASSERT_NE(up, fwd.kernels.end());
  EXPECT_EQ(up->launches, 1);
  EXPECT_EQ(std::get<GemmShape>(up->shape).m, 8192);
  // Dispatch and combine: each GPU's routed tokens out and back, BF16.
  const auto a2a = collective_load(fwd.collectives, CollectiveKind::kAllToAll, Dim::kEP);
  EXPECT_EQ(a2a.count, 2);
  EXPECT_DOUBLE_EQ(a2a.bytes, 2.0 * T * k * h * 2.0);
  // The busiest expert at 1.5x the mean: its GPU computes and receives 1.5x.
  p.moe_imbalance = 1.5;
  const BlockPass skewed = block_pass(BlockKind::kDecoder, false, layer_shape(m, p, 32000));
  EXPECT_DOUBLE_EQ(flops_of(skewed, "expert_"), 1.5 * flops_of(fwd, "expert_"));
  EXPECT_DOUBLE_EQ(collective_load(skewed.collectives, CollectiveKind::kAllToAll, Dim::kEP).bytes,
                   1.5 * a2a.bytes);
  // Without EP every GPU runs all 8 experts on its tokens: the same FLOPs in 8 grouped GEMMs.
  const BlockPass local =
      block_pass(BlockKind::kDecoder, false, layer_shape(m, ep_plan(1, 8, 1), 32000));
  EXPECT_DOUBLE_EQ(flops_of(local, "expert_"), flops_of(fwd, "expert_"));
  const auto grouped = std::find_if(local.kernels.begin(), local.kernels.end(),
                                    [](const KernelSpec& x) { return x.name == "expert_up"; });
  ASSERT_NE(grouped, local.kernels.end());
  EXPECT_EQ(std::get<GemmShape>(grouped->shape).groups, 8);  // 8 experts of 1,024 rows
  EXPECT_EQ(std::get<GemmShape>(grouped->shape).m, 1024);
  EXPECT_EQ(collective_load(local.collectives, CollectiveKind::kAllToAll, Dim::kEP).count, 0);
  // Expert TP with SP (tp 2, ep 4): the routed tokens gathered over TP, twice the rows at half
  // the width.
  const LayerShape t = layer_shape(m, ep_plan(2, 8, 4), 32000);
  const BlockPass etp = block_pass(BlockKind::kDecoder, false, t);
  EXPECT_DOUBLE_EQ(flops_of(etp, "expert_"), flops_of(fwd, "expert_") / 2.0);
  const auto gather = collective_load(etp.collectives, CollectiveKind::kAllGather, Dim::kTP);
  // The attention's gather of T x h, and the experts' of the routed rows: 2 x (T/2 x 2) x h.
  EXPECT_DOUBLE_EQ(gather.bytes, T * h * 2.0 + T * k * h * 2.0);
}

// Expert TP between 1 and tp (Mixtral 8x7b, tp 4, etp 2, ep 2 on 8 GPUs): Megatron-Core's expert
// rank generator re-divides the 8 ranks as etp 2 x ep 2 x edp 2, etp innermost, and its alltoall
// dispatcher gathers the routed tokens over that expert TP group (not over TP): each GPU's 1,024
// tokens x top-2, gathered over 2 GPUs, at half the expert width.
TEST(ExpertParallel, ExpertTensorParallelismOnItsOwnGroup) {
  const Model m = test::catalog_model("mixtral-8x7b");
  const Plan p = ep_plan(4, 2, 2, 2);
  const Layout l(p);
  EXPECT_EQ(l.collective_group(Dim::kETP, 5), (Ranks{4, 5}));
  EXPECT_EQ(l.collective_group(Dim::kEP, 5), (Ranks{5, 7}));
  EXPECT_EQ(l.collective_group(Dim::kEDP, 5), (Ranks{1, 5}));
  EXPECT_EQ(l.collective_group(Dim::kTP, 5), (Ranks{4, 5, 6, 7}));
  EXPECT_EQ(Layout(ep_plan(4, 2, 2)).collective_size(Dim::kETP), 1);  // etp = tp: TP's group
  const double T = 4096, h = 4096, f = 14336, k = 2, rows = T / 4 * k * 2;
  const BlockPass fwd = block_pass(BlockKind::kDecoder, false, layer_shape(m, p, 32000));
  EXPECT_DOUBLE_EQ(flops_of(fwd, "expert_"), 2.0 * rows * h * (f / 2) * 3.0);
  const auto etp = collective_load(fwd.collectives, CollectiveKind::kAllGather, Dim::kETP);
  EXPECT_DOUBLE_EQ(etp.bytes, rows * h * 2.0);
  EXPECT_DOUBLE_EQ(
      collective_load(fwd.collectives, CollectiveKind::kReduceScatter, Dim::kETP).bytes,
      rows * h * 2.0);
  // Over TP only the attention's sequence-parallel gather of the layer's T x h.
  EXPECT_DOUBLE_EQ(collective_load(fwd.collectives, CollectiveKind::kAllGather, Dim::kTP).bytes,
                   T * h * 2.0);
  // In the task graph: tensor-parallel traffic on groups of 2, GPU 5's with GPU 4.
  const CostModel costs =
      compute_costs(m, test::catalog_platform("h100-sxm-ndr"), p, test::uniform_partition(m, 1));
  const TaskGraph g = build_task_graph(p, costs);
  std::set<std::vector<std::int32_t>> tp_groups;
  for (const auto& op : g.ranks[5].ops) {
    if (op.type != OpType::kCollective || op.comm != CommKind::kTP) continue;
    tp_groups.insert(g.groups[static_cast<std::size_t>(op.group)].members);
  }
  EXPECT_EQ(tp_groups, (std::set<std::vector<std::int32_t>>{{4, 5}, {4, 5, 6, 7}}));
}

const KernelSpec& kernel_named(const BlockPass& p, const std::string& name) {
  const auto it = std::find_if(p.kernels.begin(), p.kernels.end(),
                               [&](const KernelSpec& x) { return x.name == name; });
  EXPECT_NE(it, p.kernels.end()) << name;
  return *it;
}

bool has_kernel(const BlockPass& p, const std::string& name) {
  return std::any_of(p.kernels.begin(), p.kernels.end(),
                     [&](const KernelSpec& x) { return x.name == name; });
}

// Megatron-Core's sequential experts (--moe-grouped-gemm off): Mixtral 8x7b at EP 2, 4 local
// experts of 2,048 rows each. Each expert's GEMMs are plain GEMMs of its own rows, launched once
// per expert (in FP8 with its own quantisation), its activation likewise; the outputs are
// concatenated after them and their gradients split back by a copy of the rows before them. The
// FLOPs are the grouped GEMM's; one local expert runs as grouped.
TEST(ExpertParallel, SequentialExpertsLaunchOncePerLocalExpert) {
  const Model m = test::catalog_model("mixtral-8x7b");
  // Each GPU takes the tokens its 4 of the 8 experts are routed from both EP ranks: T x k rows.
  const double T = 4096, h = 4096, f = 14336, k = 2, local = 4, rows = T * k;
  Plan p = ep_plan(1, 8, 2);
  p.precision = Precision::kFP8;
  const BlockPass grouped = block_pass(BlockKind::kDecoder, false, layer_shape(m, p, 32000));
  p.moe_grouped_gemm = false;
  const LayerShape s = layer_shape(m, p, 32000);
  const BlockPass fwd = block_pass(BlockKind::kDecoder, false, s);
  const BlockPass bwd = block_pass(BlockKind::kDecoder, true, s);
  EXPECT_DOUBLE_EQ(flops_of(fwd, "expert_"), flops_of(grouped, "expert_"));
  EXPECT_DOUBLE_EQ(flops_of(fwd, "expert_"), 2.0 * rows * h * f * 3.0);
  for (const auto* name : {"expert_up", "expert_down"}) {
    const KernelSpec& g = kernel_named(fwd, name);
    EXPECT_EQ(g.launches, local) << name;
    EXPECT_EQ(std::get<GemmShape>(g.shape).groups, 1) << name;
    EXPECT_EQ(std::get<GemmShape>(g.shape).m, rows / local) << name;
    EXPECT_EQ(kernel_named(fwd, std::string(name) + ".fp8_cast").launches, local) << name;
    EXPECT_EQ(kernel_named(bwd, std::string(name) + ".wgrad").launches, local) << name;
    EXPECT_EQ(kernel_named(bwd, std::string(name) + ".grad_fp8_cast").launches, local) << name;
  }
  EXPECT_EQ(std::get<GemmShape>(kernel_named(grouped, "expert_up").shape).groups, local);
  const KernelSpec& act = kernel_named(fwd, "expert_activation");
  EXPECT_EQ(act.launches, local);
  EXPECT_DOUBLE_EQ(act.bytes * local, kernel_named(grouped, "expert_activation").bytes);
  // The concatenation: read and write the rows' hidden states once each way (2 bytes each).
  EXPECT_DOUBLE_EQ(kernel_named(fwd, "expert_concat").bytes, rows * h * 2.0 * 2.0);
  EXPECT_DOUBLE_EQ(kernel_named(bwd, "expert_concat.grad").bytes, rows * h * 2.0 * 2.0);
  EXPECT_FALSE(has_kernel(grouped, "expert_concat"));
  // EP 8: one local expert, whose sequential MLP is the grouped one.
  Plan one = ep_plan(1, 8, 8);
  one.moe_grouped_gemm = false;
  const BlockPass single = block_pass(BlockKind::kDecoder, false, layer_shape(m, one, 32000));
  EXPECT_EQ(kernel_named(single, "expert_up").launches, 1);
  EXPECT_FALSE(has_kernel(single, "expert_concat"));
}

// The alltoall dispatcher's permutation 2 (Megatron-Core's sort_chunks_by_idxs): Mixtral 8x7b at
// EP 2 receives its 4 local experts' T x k rows grouped by source GPU and sorts them by expert
// before the experts, restoring the order after them; a copy of the rows each way (2 bytes read,
// 2 written per element), and their gradients back. None with one local expert (EP 8) or with the
// all-gather dispatcher, whose permutation groups the rows by local expert already.
TEST(ExpertParallel, AllToAllRowsSortedByLocalExpert) {
  const Model m = test::catalog_model("mixtral-8x7b");
  const double T = 4096, h = 4096, k = 2;
  Plan p = ep_plan(1, 8, 2);
  const LayerShape s = layer_shape(m, p, 32000);
  const BlockPass fwd = block_pass(BlockKind::kDecoder, false, s);
  const BlockPass bwd = block_pass(BlockKind::kDecoder, true, s);
  for (const auto* name : {"expert_sort", "expert_unsort"}) {
    EXPECT_DOUBLE_EQ(kernel_named(fwd, name).bytes, T * k * h * 2.0 * 2.0) << name;
    EXPECT_DOUBLE_EQ(kernel_named(bwd, std::string(name) + ".grad").bytes, T * k * h * 2.0 * 2.0);
  }
  // The busiest GPU sorts what it receives: with the busiest expert at 1.5x the mean, its GPU
  // holds that one and 3 of the other 7, which share the remaining 6.5 means.
  p.moe_imbalance = 1.5;
  const BlockPass skewed = block_pass(BlockKind::kDecoder, false, layer_shape(m, p, 32000));
  EXPECT_NEAR(kernel_named(skewed, "expert_sort").bytes,
              (1.5 + 3.0 * 6.5 / 7.0) / 4.0 * kernel_named(fwd, "expert_sort").bytes,
              h * 2.0 * 2.0);  // a kernel's rows are whole
  EXPECT_FALSE(
      has_kernel(block_pass(BlockKind::kDecoder, false, layer_shape(m, ep_plan(1, 8, 8), 32000)),
                 "expert_sort"));
  p = ep_plan(1, 8, 2);
  p.moe_dispatcher = MoeDispatcher::kAllGather;
  EXPECT_FALSE(
      has_kernel(block_pass(BlockKind::kDecoder, false, layer_shape(m, p, 32000)), "expert_sort"));
}

TEST(ExpertParallel, ExpertWeightsAndStateSplitByEp) {
  const Model m = test::catalog_model("mixtral-8x7b");
  const double expert = 3.0 * 4096 * 14336;
  EXPECT_EQ(expert_params_per_rank(m, ep_plan(1, 8, 8)), static_cast<std::int64_t>(expert));
  EXPECT_EQ(expert_params_per_rank(m, ep_plan(2, 8, 4)), static_cast<std::int64_t>(expert));
  EXPECT_EQ(expert_params_per_rank(m, ep_plan(1, 8, 1)), static_cast<std::int64_t>(8 * expert));
  // EP on or off, a GPU holds its share of the layer: attention, norms and router, and experts.
  const std::int64_t rest =
      layer_params_per_rank(m, ep_plan(1, 8, 1)) - static_cast<std::int64_t>(8 * expert);
  EXPECT_EQ(layer_params_per_rank(m, ep_plan(1, 8, 8)), rest + static_cast<std::int64_t>(expert));
  // The distributed optimizer shards dense state over dp x cp and expert state over edp.
  Plan p = ep_plan(1, 8, 2);
  p.zero = 1;
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  const Partition part = test::uniform_partition(m, 1);
  const CostModel costs = compute_costs(m, platform, p, part);
  const auto& sc = costs.stages[0];
  EXPECT_EQ(sc.expert_params_per_gpu, 32 * 4 * static_cast<std::int64_t>(expert));
  const MemoryModel mem = compute_memory(m, platform, p, part, costs);
  const double dense = static_cast<double>(sc.params_per_gpu - sc.expert_params_per_gpu);
  const double experts = static_cast<double>(sc.expert_params_per_gpu);
  EXPECT_DOUBLE_EQ(mem.stages[0].state.optimizer, 8.0 * (dense / 8.0 + experts / 4.0));
}

// Transformer Engine's cuBLAS workspaces beyond the shared one, in the allocated runtime: 4 where
// a GPU runs grouped expert GEMMs (one per compute stream), 3 where TP overlaps its GEMMs.
TEST(ExpertParallel, GroupedAndOverlappedGemmsKeepTheirOwnWorkspaces) {
  Model m = test::catalog_model("mixtral-8x7b");
  m.num_layers = 4;
  m.moe.first_dense_layers = 2;  // stage 0 dense, stage 1 MoE under pp 2
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  const double shared = 113.9 * 1024 * 1024;
  const double workspace = 32.0 * 1024 * 1024;
  ASSERT_DOUBLE_EQ(platform.memory.allocated, shared);
  ASSERT_DOUBLE_EQ(platform.memory.cublas_workspace, workspace);
  Plan p = ep_plan(2, 4, 4);
  p.pp = 2;
  p.gbs = 8;
  const Partition part = test::uniform_partition(m, 2);
  auto runtime = [&](const Plan& plan) {
    const CostModel costs = compute_costs(m, platform, plan, part);
    const MemoryModel mem = compute_memory(m, platform, plan, part, costs);
    return std::make_pair(mem.stages[0].runtime_allocated, mem.stages[1].runtime_allocated);
  };
  // The last stage also keeps Megatron-Core's "mpu" buffer: the LM head's input gathered over
  // TP under SP (4,096 tokens x h 4,096 in BF16; memory_test.cpp, GlobalMemoryBuffers).
  const double mpu = 4096.0 * 4096.0 * 2.0;
  EXPECT_EQ(runtime(p), std::make_pair(shared, shared + 4 * workspace + mpu));
  p.moe_grouped_gemm = false;  // sequential experts: plain GEMMs on the shared workspace
  EXPECT_EQ(runtime(p), std::make_pair(shared, shared + mpu));
  p.moe_grouped_gemm = true;
  p.tp_comm_overlap = true;
  EXPECT_EQ(runtime(p), std::make_pair(shared + 3 * workspace, shared + 7 * workspace + mpu));
}

// Dense gradients reduce over dp x cp, the experts' over their expert-data-parallel group.
TEST(ExpertParallel, ExpertGradientsReduceOverTheirOwnGroup) {
  const Model m = test::catalog_model("mixtral-8x7b");
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  Plan p = ep_plan(1, 8, 2);
  const Partition part = test::uniform_partition(m, 1);
  const CostModel costs = compute_costs(m, platform, p, part);
  const TaskGraph g = build_task_graph(p, costs);
  double dp_bytes = 0, edp_bytes = 0;
  for (const auto& op : g.ranks[3].ops) {
    if (op.type != OpType::kCollective || op.comm != CommKind::kDP) continue;
    const auto members = g.groups[static_cast<std::size_t>(op.group)].members.size();
    (members == 8 ? dp_bytes : edp_bytes) += op.bytes;
    if (members == 4) {
      EXPECT_EQ(g.groups[static_cast<std::size_t>(op.group)].members,
                (std::vector<std::int32_t>{1, 3, 5, 7}));
    }
  }
  const auto& sc = costs.stages[0];
  EXPECT_DOUBLE_EQ(dp_bytes, static_cast<double>(sc.params_per_gpu - sc.expert_params_per_gpu) *
                                 kGradReduceBytes);
  EXPECT_DOUBLE_EQ(edp_bytes, static_cast<double>(sc.expert_params_per_gpu) * kGradReduceBytes);
}

}  // namespace
}  // namespace trainsim
