#include "sim/reshard/checks.hpp"

#include <map>

#include "sim/check/wording.hpp"
#include "sim/core/format.hpp"
#include "sim/memory/memory.hpp"
#include "sim/reshard/conversion.hpp"
#include "sim/reshard/layout_spec.hpp"

namespace trainsim {

namespace {

// The same (tp, pp) ranks, and the same experts on each (ep, etp) rank.
bool same_model_split(const Plan& a, const Plan& b) {
  return a.tp == b.tp && a.pp == b.pp && a.vp == b.vp && a.ep == b.ep &&
         a.expert_tp() == b.expert_tp();
}

// "decoder 16-31" for a run of consecutive layers.
std::string layers_text(std::int64_t first, std::int64_t last) {
  return first == last ? "decoder " + std::to_string(first)
                       : "decoder " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

std::vector<Diagnostic> find_stage_moves(const ReshardContext& c) {
  // Runs of consecutive tensors moving between the same two stages: one block, or decoder layers.
  struct Run {
    BlockKind block;
    std::int64_t first, last, from, to;
    double bytes;
  };
  std::vector<Run> runs;
  double total = 0;
  for (std::size_t i = 0; i < c.to.params.size(); ++i) {
    const auto& a = c.from.placed[i].stages;
    const auto& b = c.to.placed[i].stages;
    if (a.empty() || b.empty() || a.front() == b.front()) continue;
    const ParamSpec& spec = c.to.params[i];
    const double bytes =
        static_cast<double>(spec.numel()) * (kCheckpointWeightBytes + kCheckpointOptimizerBytes);
    total += bytes;
    Run* r = runs.empty() ? nullptr : &runs.back();
    const bool extends = r && r->from == a.front() && r->to == b.front() &&
                         r->block == spec.block &&
                         (spec.layer < 0 || spec.layer == r->last || spec.layer == r->last + 1);
    if (extends) {
      r->last = spec.layer;
      r->bytes += bytes;
    } else {
      runs.push_back({spec.block, spec.layer, spec.layer, a.front(), b.front(), bytes});
    }
  }
  if (runs.empty()) return {};
  std::vector<std::string> parts;
  for (const auto& r : runs) {
    const std::string label =
        r.block == BlockKind::kDecoder ? layers_text(r.first, r.last) : to_string(r.block);
    parts.push_back(label + " (stage " + std::to_string(r.from) + " -> " + std::to_string(r.to) +
                    ", " + format_bytes(r.bytes) + ")");
  }
  Diagnostic d;
  d.id = "stage-change";
  d.severity = Severity::kInfo;
  d.message = format_bytes(total) +
              " of weights and optimizer state change pipeline stage: " + and_list(parts) +
              "; each new stage reads them from the old stage's files (see the conversion plan)";
  return {d};
}

std::vector<Diagnostic> find_optimizer_format(const ReshardContext& c) {
  const Plan& a = c.from.plan;
  const Plan& b = c.to.plan;
  if (!a.distributed_optimizer()) return {};
  Diagnostic d;
  d.severity = Severity::kWarning;
  switch (b.effective_framework()) {
    case Framework::kMegatron: {
      if (same_model_split(a, b)) return {};
      const bool experts = c.from.experts_apart() || c.to.experts_apart();
      d.id = "optimizer-not-reshardable";
      d.message =
          "the old layout uses Megatron-LM's distributed optimizer, whose default checkpoint "
          "format (dp_reshardable) addresses optimizer state by its place in each " +
          std::string(experts ? "(tp, pp) rank's flat buffer and each (ep, etp, pp) rank's expert "
                                "buffer, and resumes only at the same TP, PP, EP and expert TP"
                              : "(tp, pp) rank's flat buffer and resumes only at the same TP and "
                                "PP") +
          "; this change moves from " + layout_text(a) + " to " + layout_text(b);
      d.fix =
          "save the checkpoint with --dist-ckpt-optim-fully-reshardable (Megatron-Core 0.14 and "
          "later), or resume with --no-load-optim and lose the Adam moments";
      return {d};
    }
    case Framework::kDeepSpeed:
      if (a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.cp == b.cp && a.zero == b.zero) {
        return {};
      }
      d.id = "optimizer-not-reshardable";
      d.message =
          "DeepSpeed's ZeRO checkpoints hold each DP rank's flat partition of the "
          "optimizer state for one (tp, pp, dp) layout";
      d.fix = "convert with ds_to_universal.py and resume with --universal-checkpoint";
      return {d};
    case Framework::kNanotron:
    case Framework::kColossalAI:
      return {};
  }
  return {};
}

std::vector<Diagnostic> find_unbuilt_layers(const ReshardContext& c) {
  std::vector<Diagnostic> out;
  for (const LayoutShards* l : {&c.from, &c.to}) {
    const std::int64_t dropped = l->partition.dropped_layers;
    if (dropped == 0) continue;
    Diagnostic d;
    d.id = "layers-dropped";
    d.severity = Severity::kError;
    d.message = std::string(l == &c.from ? "the old" : "the new") + " layout (" +
                layout_text(l->plan) + ") builds " + std::to_string(c.model.num_layers - dropped) +
                " of the " + std::to_string(c.model.num_layers) + " decoder layers (" +
                l->partition.method + " partition): the other " + std::to_string(dropped) +
                " are " + (l == &c.from ? "not in the checkpoint" : "not loaded");
    d.fix = "a pp that divides the layers, or --partition with an explicit layout";
    out.push_back(d);
  }
  return out;
}

// The EP sizes above the layout's that Megatron-Core admits on its GPUs, smallest first.
std::vector<std::int64_t> larger_ep(const Plan& plan, std::int64_t experts) {
  std::vector<std::int64_t> out;
  const std::int64_t ranks = plan.tp * plan.cp * plan.dp;
  for (std::int64_t ep = plan.ep * 2; experts % ep == 0 && ranks % (plan.expert_tp() * ep) == 0;
       ep *= 2) {
    out.push_back(ep);
  }
  return out;
}

std::vector<Diagnostic> find_new_layout_memory(const ReshardContext& c) {
  const Plan& plan = c.to.plan;
  // Every EP rank holds as many experts' elements: EP rank 0 stands for all.
  std::int64_t worst = 0, worst_params = 0;
  LayoutShards::Numel held;
  for (std::int64_t s = 0; s < plan.pp; ++s) {
    const LayoutShards::Numel n = c.to.stage_shard_numel(s, 0);
    if (n.shared + n.experts <= worst_params) continue;
    worst = s;
    worst_params = n.shared + n.experts;
    held = n;
  }
  const RuntimeMemory& rt = c.platform.memory;
  // At ZeRO stage `zero` with the experts over `ep` EP ranks of the same GPUs: each holds
  // plan.ep / ep of its experts, their state sharded over that many times fewer ranks.
  const auto need = [&](std::int64_t zero, std::int64_t ep) {
    const bool bf16 = plan.grad_reduce_in_bf16;
    const OptimizerState kind = plan.optimizer_state;
    ModelState state = model_state(held.shared, zero, plan.data_shards(), bf16, kind);
    state += model_state(held.experts * plan.ep / ep, zero,
                         plan.expert_data_shards() * plan.ep / ep, bf16, kind);
    return device_bytes(rt, state.total() + rt.allocated);
  };
  const double bytes = need(plan.zero, plan.ep);
  const double capacity = c.platform.gpu.memory_bytes;
  if (bytes <= capacity) return {};
  Diagnostic d;
  d.id = "oom";
  d.severity = Severity::kError;
  d.stage = worst;
  d.message = "at " + layout_text(plan) + " a GPU of stage " + std::to_string(worst) + " holds " +
              format_grouped(worst_params) + " parameters: " + format_bytes(bytes) +
              " of weights, gradients, optimizer state and runtime memory before any "
              "activation, more than the GPU's " +
              format_bytes(capacity) + " (" + c.platform.gpu.name + ")";
  const std::string on_top = " (activations come on top)";
  for (std::int64_t zero = plan.zero + 1; zero <= (plan.pp > 1 ? 1 : 3); ++zero) {
    if (plan.data_shards() > 1 && need(zero, plan.ep) <= capacity) {
      d.fix = "zero=" + std::to_string(zero) + " in --to brings it to " +
              format_bytes(need(zero, plan.ep)) + on_top;
      return {d};
    }
  }
  if (held.experts > 0) {
    for (const std::int64_t ep : larger_ep(plan, c.model.moe.num_experts)) {
      if (need(plan.zero, ep) > capacity) continue;
      d.fix = "ep=" + std::to_string(ep) + " in --to (the same GPUs, " +
              std::to_string(c.model.moe.num_experts / ep) + " experts a rank) brings it to " +
              format_bytes(need(plan.zero, ep)) + on_top;
      return {d};
    }
  }
  d.fix = "more tensor- or pipeline-parallel GPUs in --to (tp=, pp=)";
  return {d};
}

std::vector<Diagnostic> check_reshard(const ReshardContext& c) {
  std::vector<Diagnostic> out;
  for (auto* find : {find_unbuilt_layers, find_padding_change, find_padding_rows,
                     find_optimizer_format, find_stage_moves, find_new_layout_memory}) {
    for (auto& d : find(c)) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace trainsim
