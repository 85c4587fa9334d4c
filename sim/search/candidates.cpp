#include "sim/search/candidates.hpp"

#include <algorithm>
#include <cstdlib>

#include "sim/plan/plan_variants.hpp"
#include "sim/plan/vocab.hpp"

namespace trainsim {

namespace {

// One more pipeline stage: the next pp that divides the same GPUs, DP shrinking.
std::optional<Plan> one_more_stage(const Plan& plan) {
  for (std::int64_t pp = plan.pp + 1; pp <= plan.pp * plan.dp; ++pp) {
    if ((plan.pp * plan.dp) % pp != 0) continue;
    Plan p = plan;
    p.pp = pp;
    p.dp = plan.pp * plan.dp / pp;
    return p;
  }
  return std::nullopt;
}

}  // namespace

std::vector<Plan> memory_saving_changes(const Plan& plan, const Model& model,
                                        std::int64_t gpus_per_node) {
  std::vector<Plan> out;
  auto with = [&](auto change) {
    Plan p = plan;
    change(p);
    if (p.tp <= gpus_per_node && divides_batch(p)) out.push_back(p);
  };
  // GPipe keeps every micro-batch's activations until the backward; 1F1B at most pp of them.
  if (plan.schedule == ScheduleKind::kGPipe) {
    with([](Plan& p) { p.schedule = ScheduleKind::k1F1B; });
  }
  if (plan.recompute == Recompute::kNone) {
    with([](Plan& p) { p = recomputing(p, Recompute::kSelective); });
  }
  // Full recomputation of every layer (of the rest, where it takes part of them).
  if (plan.recompute != Recompute::kFull || plan.recompute_num_layers > 0) {
    with([](Plan& p) { p = recomputing(p, Recompute::kFull); });
  }
  if (plan.tp > 1 && !plan.sp) with([](Plan& p) { p.sp = true; });
  // Several distributed-optimizer instances hold the optimizer state N times over.
  if (plan.num_distributed_optimizer_instances > 1) {
    with([](Plan& p) { p.num_distributed_optimizer_instances = 1; });
  }
  if (plan.dp > 1) {
    for (std::int64_t z : {1, 3}) {
      if (plan.zero < z) with([z](Plan& p) { p.zero = z; });
    }
  }
  if (auto deeper = one_more_stage(plan)) with([&](Plan& p) { p = *deeper; });
  if (plan.dp % 2 == 0) with([&](Plan& p) { p = with_tp_dp(plan, plan.tp * 2, plan.dp / 2); });
  if (plan.dp % 2 == 0) with([&](Plan& p) { p = with_cp_dp(plan, plan.cp * 2, plan.dp / 2); });
  // Twice the EP shards the experts' weights, gradients and optimizer state over twice the GPUs.
  if (model.moe.is_moe()) with([](Plan& p) { p.ep *= 2; });
  if (plan.mbs > 1 && plan.mbs % 2 == 0) with([](Plan& p) { p.mbs /= 2; });
  // The deferred LM-head weight gradients keep their buffers to the flush (a lower limit that
  // fits is searched by memory_fix).
  if (plan.defer_embedding_wgrad_compute) {
    with([](Plan& p) {
      p.defer_embedding_wgrad_compute = false;
      p.wgrad_deferral_limit = 0;
    });
  }
  return out;
}

namespace {

// The expert-parallel sizes a layout can take: the powers of two that divide the experts and the
// stage's tp x cp x dp GPUs over the expert TP; 1 alone for a dense model.
std::vector<std::int64_t> expert_parallel_sizes(const Plan& layout, const MoeSpec& moe) {
  std::vector<std::int64_t> out{1};
  if (!moe.is_moe()) return out;
  const std::int64_t gpus = layout.tp * layout.cp * layout.dp;
  for (std::int64_t ep = 2; moe.num_experts % ep == 0 && gpus % (ep * layout.expert_tp()) == 0;
       ep *= 2) {
    out.push_back(ep);
  }
  return out;
}

// The expert TP sizes a layout can take: the plan's, and for a mixture-of-experts model under
// TP also 1 (Megatron-Core's expert_tensor_parallel_size 1, as DeepSeek-V3's and Qwen3-MoE's
// recipes run it), which frees the experts from TP and lets EP span the TP GPUs.
std::vector<std::int64_t> expert_tp_sizes(const Plan& plan, const Plan& layout,
                                          const MoeSpec& moe) {
  std::vector<std::int64_t> out{plan.etp};
  if (moe.is_moe() && layout.tp > 1 && layout.expert_tp() != 1) out.push_back(1);
  return out;
}

// The layout with each ZeRO stage that applies to it (only 0 without data parallelism).
ZeroLadder zero_ladder(const Plan& layout, Recompute recompute) {
  ZeroLadder ladder;
  for (std::int64_t zero : {0, 1, 3}) {
    if (zero > 0 && layout.dp * layout.cp == 1) continue;
    Plan p = layout;
    p.zero = zero;
    ladder.push_back(recomputing(p, recompute));
  }
  return ladder;
}

// The layouts of `gpus` GPUs per context-parallel rank (layouts_on).
void add_layouts(const Plan& plan, std::int64_t cp, std::int64_t gpus, std::int64_t gpus_per_node,
                 const Model& model, Recompute recompute, std::vector<ZeroLadder>& out) {
  for (std::int64_t tp = 1; tp <= gpus_per_node && tp <= gpus; tp *= 2) {
    if (gpus % tp != 0) continue;
    for (std::int64_t pp = 1; pp <= gpus / tp && pp <= model.num_layers; ++pp) {
      if ((gpus / tp) % pp != 0) continue;
      const std::int64_t dp = gpus / tp / pp;
      if (plan.gbs > 0 && plan.gbs % (plan.mbs * dp) != 0) continue;
      Plan layout = with_cp(with_tp_dp(plan, tp, dp), cp);
      layout.pp = pp;
      layout.gpus = 0;
      layout.sp = tp > 1;
      for (const std::int64_t etp : expert_tp_sizes(plan, layout, model.moe)) {
        layout.etp = etp;
        for (const std::int64_t ep : expert_parallel_sizes(layout, model.moe)) {
          layout.ep = ep;
          out.push_back(zero_ladder(layout, recompute));
        }
      }
    }
  }
}

}  // namespace

std::vector<ZeroLadder> layouts_on(const Plan& plan, std::int64_t gpus, std::int64_t gpus_per_node,
                                   const Model& model, Recompute recompute) {
  std::vector<ZeroLadder> out;
  // Megatron-Core splits the sequence into 2 x CP chunks (one pair per CP rank).
  for (std::int64_t cp = 1; gpus % cp == 0 && (cp == 1 || plan.seq_len % (2 * cp) == 0); cp *= 2) {
    add_layouts(plan, cp, gpus / cp, gpus_per_node, model, recompute, out);
  }
  return out;
}

std::vector<Plan> smaller_pp(const Plan& plan) {
  std::vector<Plan> out;
  for (std::int64_t pp = plan.pp - 1; pp >= 1; --pp) {
    if ((plan.pp * plan.dp) % pp != 0) continue;
    Plan p = plan;
    p.pp = pp;
    p.dp = plan.pp * plan.dp / pp;
    if (divides_batch(p)) out.push_back(p);
  }
  return out;
}

// How far apart, in multiples of vp, the uneven ends' layer counts may lie.
constexpr std::int64_t kUnevenEndsSpread = 8;

std::vector<Plan> uneven_ends(const Plan& plan, std::int64_t num_layers) {
  std::vector<Plan> out;
  const std::int64_t v = plan.vp, pp = plan.pp;
  if (pp < 2) return out;
  // The fewest layers a middle stage may take: num_layers / pp rounded up to a multiple of vp.
  const std::int64_t fewest = ((num_layers + pp - 1) / pp + v - 1) / v * v;
  // With two stages there is no middle one: the ends split every layer, neither above the most.
  for (std::int64_t middle = pp == 2 ? fewest + 2 * v : fewest; middle <= fewest + 2 * v;
       middle += v) {
    const std::int64_t ends = num_layers - (pp - 2) * middle;
    for (std::int64_t first = std::max(v, ends - middle); first <= std::min(middle, ends - v);
         first += v) {
      const std::int64_t last = ends - first;
      const bool uniform = first * pp == num_layers && last * pp == num_layers &&
                           (pp == 2 || middle * pp == num_layers);
      // Ends within 8 chunks' layers of each other: an LM head outweighs a few layers, and a
      // long pipeline would otherwise have a hundred splits to price.
      const bool close = std::abs(first - last) <= kUnevenEndsSpread * v;
      if (last % v != 0 || uniform || !close) continue;
      Plan p = plan;
      p.clear_uneven_stage_options();  // the ends replace whatever uneven split the plan had
      p.decoder_first_pipeline_num_layers = first;
      p.decoder_last_pipeline_num_layers = last;
      if (p.decoder_first_pipeline_num_layers == plan.decoder_first_pipeline_num_layers &&
          p.decoder_last_pipeline_num_layers == plan.decoder_last_pipeline_num_layers &&
          !plan.account_for_embedding_in_pipeline_split &&
          !plan.account_for_loss_in_pipeline_split) {
        continue;  // the plan's own split
      }
      out.push_back(p);
    }
  }
  return out;
}

std::optional<Plan> unpadded_vocabulary_multiple(const Plan& plan, std::int64_t vocab_size) {
  if (vocab_size % plan.tp != 0) return std::nullopt;
  const std::int64_t per_rank = vocab_size / plan.tp;
  for (std::int64_t alt = std::int64_t{1} << 62; alt >= 1; alt /= 2) {
    if (alt >= plan.vocab_multiple() || per_rank % alt != 0) continue;
    Plan p = plan;
    p.vocab_divisible_by = alt;
    return p;
  }
  return std::nullopt;
}

std::vector<Plan> unpadded_smaller_tp(const Plan& plan, std::int64_t vocab_size) {
  std::vector<Plan> out;
  for (std::int64_t tp = plan.tp / 2; tp >= 1; tp /= 2) {
    if (padded_vocab(vocab_size, plan.vocab_multiple(), tp) != vocab_size) continue;
    const Plan p = with_tp_dp(plan, tp, plan.dp * plan.tp / tp);
    if (divides_batch(p)) out.push_back(p);
  }
  return out;
}

namespace {

// The plan's neighbours in its layout: twice the PP or TP from the DP, half the TP, half or
// twice the virtual stages (interleaving a plain pipeline).
void add_layout_neighbours(std::vector<Plan>& out, const Plan& plan, std::int64_t gpus_per_node) {
  if (plan.dp % 2 == 0) {
    Plan p = plan;
    p.pp *= 2;
    p.dp /= 2;
    out.push_back(p);
    if (plan.tp * 2 <= gpus_per_node) out.push_back(with_tp_dp(plan, plan.tp * 2, plan.dp / 2));
  }
  if (plan.tp % 2 == 0) out.push_back(with_tp_dp(plan, plan.tp / 2, plan.dp * 2));
  if (plan.pp > 1) {
    Plan p = plan;
    p.schedule = ScheduleKind::kInterleaved;
    if (plan.schedule != ScheduleKind::kInterleaved) {
      p.vp = 2;
      out.push_back(p);
    } else {
      p.vp = plan.vp * 2;
      out.push_back(p);
      p.vp = plan.vp / 2;
      if (p.vp == 1) p.schedule = ScheduleKind::k1F1B;
      out.push_back(p);
    }
  }
}

// The plan's neighbours in its other settings: micro-batch size, recomputation, CP, optimizer
// instances, and a mixture-of-experts model's EP and expert TP.
void add_setting_neighbours(std::vector<Plan>& out, const Plan& plan, bool moe) {
  for (const std::int64_t mbs : {plan.mbs * 2, plan.mbs / 2}) {
    if (mbs < 1) continue;
    Plan p = plan;
    p.mbs = mbs;
    out.push_back(p);
  }
  for (const Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    if (r != plan.recompute || plan.recompute_num_layers > 0) {
      out.push_back(recomputing(plan, r));
    }
  }
  // Half and twice the CP (data parallelism taking the rest); for a mixture-of-experts model half
  // and twice the EP (within the same data-parallel GPUs).
  if (plan.cp % 2 == 0) out.push_back(with_cp_dp(plan, plan.cp / 2, plan.dp * 2));
  if (plan.dp % 2 == 0) out.push_back(with_cp_dp(plan, plan.cp * 2, plan.dp / 2));
  // Several distributed-optimizer instances: half and twice as many (gradients reduced within
  // smaller or larger groups, the state sharded accordingly).
  if (const auto n = plan.num_distributed_optimizer_instances; n > 1) {
    for (const std::int64_t m : {n / 2, n * 2}) {
      Plan p = plan;
      p.num_distributed_optimizer_instances = m;
      out.push_back(p);
    }
  }
  if (moe) {
    Plan p = plan;
    p.ep *= 2;
    out.push_back(p);
    if (plan.ep % 2 == 0) {
      p.ep = plan.ep / 2;
      out.push_back(p);
    }
    // Under TP, the experts split over TP (expert TP as tp) or whole on each GPU (expert TP 1).
    if (plan.tp > 1) {
      p = plan;
      p.etp = plan.expert_tp() == 1 ? 0 : 1;
      out.push_back(p);
    }
  }
}

}  // namespace

std::vector<Plan> neighbouring_plans(const Plan& plan, const Model& model,
                                     std::int64_t gpus_per_node) {
  std::vector<Plan> out = smaller_pp(plan);
  add_layout_neighbours(out, plan, gpus_per_node);
  add_setting_neighbours(out, plan, model.moe.is_moe());
  return out;
}

}  // namespace trainsim
