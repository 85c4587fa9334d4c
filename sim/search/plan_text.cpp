#include "sim/search/plan_text.hpp"

#include <vector>

#include "sim/core/format.hpp"

namespace trainsim {

namespace {

void append(std::string& out, const std::string& flag) {
  out += (out.empty() ? "" : " ") + flag;
}

// Megatron-LM's uneven-stage options the change sets, then those it drops, in one
// "without A and B" (a candidate on the balanced partition drops all it had).
void add_uneven_stage_options(std::string& out, const Plan& from, const Plan& to) {
  std::vector<std::string> dropped;
  auto count = [&](const std::string& flag, std::int64_t was, std::int64_t now) {
    if (now == was) return;
    if (now >= 0) {
      append(out, flag + " " + std::to_string(now));
    } else {
      dropped.push_back(flag);
    }
  };
  auto toggle = [&](const std::string& flag, bool was, bool now) {
    if (now && !was) append(out, flag);
    if (was && !now) dropped.push_back(flag);
  };
  count("--decoder-first-pipeline-num-layers", from.decoder_first_pipeline_num_layers,
        to.decoder_first_pipeline_num_layers);
  count("--decoder-last-pipeline-num-layers", from.decoder_last_pipeline_num_layers,
        to.decoder_last_pipeline_num_layers);
  toggle("--account-for-embedding-in-pipeline-split", from.account_for_embedding_in_pipeline_split,
         to.account_for_embedding_in_pipeline_split);
  toggle("--account-for-loss-in-pipeline-split", from.account_for_loss_in_pipeline_split,
         to.account_for_loss_in_pipeline_split);
  if (!dropped.empty()) append(out, "without " + join(dropped, " and "));
}

}  // namespace

std::string plan_changes(const Plan& from, const Plan& to) {
  std::string out;
  auto add = [&out](const std::string& flag) { append(out, flag); };
  if (to.schedule != from.schedule) add(std::string("--schedule ") + to_string(to.schedule));
  if (to.tp != from.tp) add("--tp " + std::to_string(to.tp));
  if (to.pp != from.pp) add("--pp " + std::to_string(to.pp));
  if (to.vp != from.vp) add("--vp " + std::to_string(to.vp));
  if (to.dp != from.dp) add("--dp " + std::to_string(to.dp));
  if (to.cp != from.cp) add("--cp " + std::to_string(to.cp));
  if (to.cp_comm != from.cp_comm) add(std::string("--cp-comm-type ") + to_string(to.cp_comm));
  if (to.cp_a2a_size != from.cp_a2a_size) add("--cp-a2a-size " + std::to_string(to.cp_a2a_size));
  if (to.fp8_recipe != from.fp8_recipe)
    add(std::string("--fp8-recipe ") + to_string(to.fp8_recipe));
  if (to.mbs != from.mbs) add("--mbs " + std::to_string(to.mbs));
  // The batch the search ran `to` with (PlanSpace::price), named where the flags alone would run
  // another: a plan on Megatron-LM's default batch (mbs x dp) whose dp or mbs changes.
  const std::int64_t priced_batch = to.gbs > 0 ? to.gbs : from.global_batch();
  if (priced_batch != (from.gbs > 0 ? from.gbs : to.mbs * to.dp)) {
    add("--gbs " + std::to_string(priced_batch));
  }
  if (to.sp && !from.sp) add("--sp");
  if (to.zero != from.zero) add("--zero " + std::to_string(to.zero));
  if (to.num_distributed_optimizer_instances != from.num_distributed_optimizer_instances) {
    add("--num-distributed-optimizer-instances " +
        std::to_string(to.num_distributed_optimizer_instances));
  }
  if (to.recompute != from.recompute) add(std::string("--recompute ") + to_string(to.recompute));
  if (to.recompute == Recompute::kFull && to.recompute_method != from.recompute_method) {
    add(std::string("--recompute-method ") + to_string(to.recompute_method));
  }
  if (to.recompute == Recompute::kFull && to.recompute_num_layers != from.recompute_num_layers) {
    add(to.recompute_num_layers > 0
            ? "--recompute-num-layers " + std::to_string(to.recompute_num_layers)
            : std::string("--recompute-num-layers 0 (every layer)"));
  }
  if (to.ep != from.ep) add("--ep " + std::to_string(to.ep));
  if (to.etp != from.etp) add("--etp " + std::to_string(to.etp));
  if (to.moe_capacity_factor != from.moe_capacity_factor) {
    add("--moe-capacity-factor " + format_fixed(to.moe_capacity_factor, 2) +
        " (tokens over it dropped)");
  }
  if (to.moe_a2a_overlap && !from.moe_a2a_overlap) add("--overlap-moe-expert-parallel-comm");
  // With the schedule unchanged (another schedule fixes its own overlap).
  if (to.schedule == from.schedule && to.p2p_overlap() != from.p2p_overlap()) {
    add(to.p2p_overlap() ? "without --no-overlap-p2p-comm" : "--no-overlap-p2p-comm");
  }
  if (to.rank_order != from.rank_order) add("--rank-order " + to_string(to.rank_order));
  add_uneven_stage_options(out, from, to);
  if (from.defer_embedding_wgrad_compute && !to.defer_embedding_wgrad_compute) {
    add("without --defer-embedding-wgrad-compute");
  } else if (to.defer_embedding_wgrad_compute) {
    if (!from.defer_embedding_wgrad_compute) add("--defer-embedding-wgrad-compute");
    if (to.wgrad_deferral_limit != from.wgrad_deferral_limit) {
      add("--wgrad-deferral-limit " + std::to_string(to.wgrad_deferral_limit));
    }
  }
  return out;
}

std::string balanced_plan_changes(const Plan& from, const Plan& to) {
  std::string out = "--partition balanced";
  // A framework the plan took from its partition rule (nanotron's, DeepSpeed's) is priced on the
  // balanced partition too, and named, or the command would run Megatron-LM's vocabulary padding.
  Plan as_run = to;
  as_run.partition = "balanced";
  if (as_run.effective_framework() != to.effective_framework()) {
    append(out, std::string("--framework ") + to_string(to.effective_framework()));
  }
  const std::string changed = plan_changes(from, to);
  return out + (changed.empty() ? "" : " " + changed);
}

std::string step_comparison(double alternative, double now) {
  std::string change = format_fixed((alternative - now) / now * 100.0, 1);
  if (change == "-0.0") change = "0.0";
  if (change[0] != '-' && change != "0.0") change = "+" + change;
  return "step " + format_seconds(alternative) + " (" + change + " % vs " + format_seconds(now) +
         " now)";
}

}  // namespace trainsim
