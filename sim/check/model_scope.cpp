// What the model holds beyond what is simulated: a sequence longer than the positions it was
// trained on, configuration keys that change the cost but are not modelled, an option the
// framework drops for this model, one this plan gives nothing to do, and context parallelism past
// what any measured run checked. The numbers are still
// those of the plan as asked (the dropped option as the framework runs it); the findings say what
// they leave out.
#include "sim/check/detect.hpp"
#include "sim/core/format.hpp"
#include "sim/cost/layer_ops.hpp"
#include "sim/plan/plan_schema.hpp"

namespace trainsim {

namespace {

Finding finding(Severity severity, std::string id, std::string message, std::string advice) {
  Diagnostic diag;
  diag.id = std::move(id);
  diag.severity = severity;
  diag.message = std::move(message);
  return {std::move(diag), Advice{std::move(advice)}};
}

Finding warning(std::string id, std::string message, std::string advice) {
  return finding(Severity::kWarning, std::move(id), std::move(message), std::move(advice));
}

// Context parallelism past the largest of any run trainsim's step times were checked against:
// priced all the same, from the kernel database's block attentions and the ring's transfers.
Finding cp_beyond_validation(const Plan& plan) {
  const auto chunk = plan.seq_len / (2 * plan.cp);
  return finding(
      Severity::kInfo, "cp-beyond-validation",
      "cp " + std::to_string(plan.cp) + " is past cp " + std::to_string(kLargestValidatedCp) +
          ", the largest context parallelism of the measured runs trainsim's step time is "
          "checked against (trainsim validate): its chunks of " +
          format_grouped(chunk) +
          " tokens and the ring's steps are priced from the kernel database and the links, "
          "but no measured run holds such a plan",
      "weigh its step against a plan of cp " + std::to_string(kLargestValidatedCp) +
          " or less, or check it on a measured run (trainsim validate RUN.json)");
}

}  // namespace

std::vector<Finding> find_model_beyond_modelled(const CheckContext& context) {
  const Model& model = context.model;
  const std::int64_t seq = context.plan.seq_len;
  std::vector<Finding> out;
  // Learned positions past the table are an input error (plan rules); RoPE extrapolates, badly.
  if (model.position_embedding == PositionEmbedding::kRope && model.max_position_embeddings > 0 &&
      seq > model.max_position_embeddings) {
    out.push_back(warning(
        "sequence-past-trained-positions",
        "the sequence (" + format_grouped(seq) + " tokens) is longer than the " +
            format_grouped(model.max_position_embeddings) +
            " positions the model was trained on (max_position_embeddings): the step is "
            "simulated as asked, but RoPE does not extrapolate that far unaided",
        "train at seq_len " + std::to_string(model.max_position_embeddings) +
            " or less, or extend the context first (rope_scaling, as long-context recipes do) "
            "and raise max_position_embeddings"));
  }
  for (const UnmodelledKey& key : model.unmodelled) {
    if (seq <= key.beyond_seq_len) continue;
    out.push_back(warning("unmodelled-config-key", key.note, key.effect));
  }
  if (context.plan.tp_comm_overlap && !decoder_tp_overlap(model, context.plan)) {
    out.push_back(warning(
        "tp-comm-overlap-dropped",
        "--tp-comm-overlap does not reach this model's layers: Megatron-Core turns it off for "
        "multi-latent attention (the first layer's q_down_proj, a Transformer Engine linear whose "
        "buffer name TE does not overlap, sets the shared config's tp_comm_overlap to False), so "
        "every TP call of the decoder runs as without it, as priced here (the first layer's "
        "output projection on each pipeline rank, built before it, keeps its overlap)",
        "drop --tp-comm-overlap: the step is priced the same without it, and Megatron-Core runs "
        "it the same but for that one projection per pipeline rank"));
  }
  if (context.plan.cp > kLargestValidatedCp) out.push_back(cp_beyond_validation(context.plan));
  // A field off its default where the plan schema says it changes nothing (its `unused`): --sp
  // at tp 1, which Megatron-LM's validate_args turns off; --cp-comm-type at cp 1, accepted so
  // that a sweep over cp keeps one kind.
  for (const PlanField& f : plan_fields()) {
    const std::string why = unused_reason(f, context.plan);
    if (why.empty() || !f.report) continue;
    const auto value = f.report(context.plan);
    if (value == f.report(Plan{})) continue;
    const std::string flag = flag_of(f.name);
    // The flag as given, and the flag to drop: a switch is its own value.
    const std::string dropped = f.type == FieldType::kBool ? switch_flag(f) : flag;
    const std::string given =
        f.type == FieldType::kBool
            ? dropped
            : flag + " " + (value.is_string() ? value.get<std::string>() : value.dump());
    out.push_back(
        finding(Severity::kInfo, flag.substr(2) + "-unused",
                given + " has no effect: " + why + ", and the step is priced as without it",
                "drop " + dropped + (f.unused_fix.empty() ? "" : ", or " + f.unused_fix)));
  }
  return out;
}

}  // namespace trainsim
