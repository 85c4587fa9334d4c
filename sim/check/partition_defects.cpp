// Partition defects a framework stops on: a stage with no blocks, a stage with blocks but no
// parameters, and decoder layers the rule does not build.
#include <numeric>

#include "sim/check/detect.hpp"
#include "sim/check/wording.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/vocab.hpp"

namespace trainsim {

namespace {

// What the framework raises when a stage has nothing to train.
std::string framework_error(const Plan& plan, std::int64_t stage) {
  switch (plan.effective_framework()) {
    case Framework::kNanotron:
      return "nanotron stops at start-up with \"ValueError: Can't use DDP because model in PP=" +
             std::to_string(stage) +
             " has no gradient. Consider increasing the number of layers of your model, or put "
             "a smaller PP size.\"";
    case Framework::kDeepSpeed:
      return "DeepSpeed builds that stage's optimizer over no parameters and PyTorch raises "
             "\"ValueError: optimizer got an empty parameter list\"";
    default:
      return "a data-parallel wrapper or optimizer over no parameters fails at start-up";
  }
}

// Why nanotron's rule put the blocks where it did.
std::string nanotron_explanation(const CheckContext& c) {
  const Model& model = c.model;
  const auto vocab = padded_vocab(model.vocab_size, c.plan.vocab_multiple(), c.plan.tp);
  const auto costs = nanotron_block_costs(model, c.partition.blocks, vocab);
  const std::int64_t decoder = 4 * model.num_attention_heads *
                                   (model.hidden_size / model.num_attention_heads) *
                                   model.hidden_size +
                               3 * model.ffn_hidden_size * model.hidden_size;
  const std::int64_t head = vocab * model.hidden_size;
  const std::int64_t total = std::accumulate(costs.begin(), costs.end(), std::int64_t{0});
  std::int64_t head_stage = 0;
  for (std::int64_t s = 0; s < c.partition.num_stages(); ++s) {
    if (c.partition.holds(s, BlockKind::kLmHead)) head_stage = s;
  }
  return "nanotron's get_block_compute_costs weighs each decoder layer " + format_grouped(decoder) +
         " and the LM head " + format_grouped(head) + " (padded vocabulary " +
         format_grouped(vocab) + " x hidden " + std::to_string(model.hidden_size) + ": " +
         percent(static_cast<double>(head) / static_cast<double>(total)) +
         " of the total), every other block 0; a rank takes blocks until their running cost "
         "passes total x (rank + 1) / pp, so the LM head fills stage " +
         std::to_string(head_stage) + " and what follows it spills onto the next stages";
}

// Why the rule produced the partition it did.
std::string rule_explanation(const CheckContext& c) {
  const PartitionSpec spec = parse_partition_spec(c.plan.partition, "--partition");
  if (spec.rule == PartitionRule::kNanotron) return nanotron_explanation(c);
  if (spec.rule == PartitionRule::kDeepSpeedType ||
      spec.rule == PartitionRule::kDeepSpeedParameters) {
    const std::string weights =
        spec.rule == PartitionRule::kDeepSpeedType
            ? "weighs layers whose class name matches /" + spec.argument + "/ 1 and the rest 0"
            : "weighs every layer by its parameter count";
    return "DeepSpeed's PipelineModule " + weights +
           "; its partition_balanced binary-searches the heaviest stage's weight and cuts "
           "greedily, which can fill the first stages to that weight and leave the last ones "
           "with nothing (decoders per stage " +
           decoder_counts_text(c.partition) + ")";
  }
  if (spec.rule == PartitionRule::kLayout) return "the layout string assigns the stages as written";
  return rule_name(c.plan) + " rule gives decoders per stage " + decoder_counts_text(c.partition);
}

std::string dropped_layers_message(const CheckContext& c) {
  const Model& model = c.model;
  const std::int64_t dropped = c.partition.dropped_layers;
  const std::string built = std::to_string(model.num_layers - dropped);
  const std::string layers = std::to_string(model.num_layers);
  const PartitionSpec spec = parse_partition_spec(c.plan.partition, "--partition");
  if (spec.rule == PartitionRule::kLayout) {
    return "the layout builds " + built + " of the model's " + layers +
           " decoder layers; Megatron-LM rejects it (\"Number of decoder layers " + built +
           " must match num_layers " + layers +
           "\"), and the model simulated here is the smaller one";
  }
  return "pp " + std::to_string(c.plan.pp) + " does not divide the " + layers +
         " decoder layers: Megatron-Core's get_num_layers_to_build (before uneven stages were "
         "supported) gives every stage num_layers // pp = " +
         std::to_string(model.num_layers / c.plan.pp) + " layers, builds " + built +
         " and silently drops the last " + std::to_string(dropped) +
         "; current Megatron-LM refuses the plan (num_layers should be divisible by "
         "pipeline_model_parallel_size). The step simulated here trains the smaller model";
}

// The defect of stage `s` (no blocks, or blocks without parameters); nullopt for a sound stage.
std::optional<Diagnostic> stage_defect(const CheckContext& c, std::int64_t s) {
  const Partition& p = c.partition;
  if (p.has_parameters(s) && p.num_blocks(s) > 0) return std::nullopt;
  Diagnostic d;
  d.severity = Severity::kError;
  d.stage = s;
  const std::string why = rule_explanation(c) + ". " + framework_error(c.plan, s) + ".";
  if (p.num_blocks(s) == 0) {
    d.id = "empty-stage";
    d.message = stage_name(p, s) + " of " + std::to_string(p.num_stages()) +
                " holds no blocks at all: its GPUs only pass activations on. " + why;
  } else {
    d.id = "stage-without-parameters";
    d.message = stage_name(p, s) + " holds only " + and_list(p.labels(s)) +
                ": no parameters to train. " + why;
  }
  return d;
}

}  // namespace

std::optional<std::string> partition_defect(const Partition& partition) {
  if (partition.dropped_layers > 0) {
    return "drops " + std::to_string(partition.dropped_layers) + " decoder layers";
  }
  for (std::int64_t s = 0; s < partition.num_stages(); ++s) {
    if (!partition.has_parameters(s)) return "stage " + std::to_string(s) + " has no parameters";
  }
  return std::nullopt;
}

std::vector<Finding> find_partition_defects(const CheckContext& context) {
  const DefectFreePartition request{context.partition.method != "balanced"};
  std::vector<Finding> out;
  for (std::int64_t s = 0; s < context.partition.num_stages(); ++s) {
    if (auto d = stage_defect(context, s)) out.push_back({std::move(*d), request});
  }
  if (context.partition.dropped_layers > 0) {
    Diagnostic d;
    d.id = "layers-dropped";
    d.severity = Severity::kError;
    d.message = dropped_layers_message(context);
    out.push_back({std::move(d), request});
  }
  return out;
}

}  // namespace trainsim
