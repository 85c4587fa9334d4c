#pragma once
// The layer-to-stage partition. A model is a sequence of blocks (embedding, decoder layers,
// final norm, LM head, the loss; nanotron adds a cast to fp32); each pipeline stage holds a
// contiguous run of them. The frameworks' own rules are reproduced exactly, defects included:
// that is how trainsim predicts the stages they will build.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// kMtp: one multi-token-prediction module (its norms, projection, decoder layer and norm; its
/// logits and loss are the LM head's and the loss's, which run once more for each module).
enum class BlockKind { kEmbedding, kDecoder, kMtp, kFinalNorm, kLmHead, kCast, kLoss };
const char* to_string(BlockKind kind);
/// Whether a block has trainable parameters (the cast and the loss have none).
bool has_parameters(BlockKind kind);

struct Block {
  BlockKind kind;
  std::int64_t layer = -1;  // decoder (or multi-token-prediction module) index, else -1
};

struct StageRange {
  std::int64_t begin = 0;  // [begin, end) into Partition::blocks
  std::int64_t end = 0;
};

/// With interleaving (vp > 1) each physical stage holds vp model chunks; `stages` lists the
/// pp x vp virtual stages in model order, virtual stage k being chunk k / pp of physical stage
/// k % pp (Megatron-LM's order).
struct Partition {
  std::string method;
  std::vector<Block> blocks;        // the blocks the framework builds, in execution order
  std::vector<StageRange> stages;   // virtual stages
  std::int64_t chunks = 1;          // vp
  std::int64_t dropped_layers = 0;  // decoder layers of the model the rule does not build

  /// Virtual stages (pp x vp); the per-stage queries below take a virtual stage.
  std::int64_t num_stages() const { return static_cast<std::int64_t>(stages.size()); }
  std::int64_t physical_stages() const { return num_stages() / chunks; }
  std::int64_t virtual_stage(std::int64_t stage, std::int64_t chunk) const {
    return chunk * physical_stages() + stage;
  }
  std::int64_t num_blocks(std::int64_t stage) const;
  std::int64_t decoders(std::int64_t stage) const;
  /// Blocks of `kind` in the stage.
  std::int64_t count(std::int64_t stage, BlockKind kind) const;
  bool holds(std::int64_t stage, BlockKind kind) const;
  /// Whether any block of the stage has trainable parameters.
  bool has_parameters(std::int64_t stage) const;
  /// The last block of the stage (what it sends on), or nullptr for an empty stage.
  const Block* last_block(std::int64_t stage) const;
  /// Block names with decoder runs compressed: {"embedding", "decoder 0-19"}.
  std::vector<std::string> labels(std::int64_t stage) const;
  /// Decoder layers per stage.
  std::vector<std::int64_t> decoder_counts() const;
  /// The partition as a Megatron-LM pipeline_model_parallel_layout string ("Et*19|t*20|...L").
  std::string megatron_layout() const;
};

/// The rules a plan can name with --partition.
enum class PartitionRule {
  kUniform,              // Megatron-LM (with its uneven-stage options)
  kLayout,               // an explicit Megatron-LM pipeline_model_parallel_layout
  kNanotron,             // nanotron's get_block_compute_costs + threshold walk
  kDeepSpeedUniform,     // DeepSpeed PipelineModule partition_method="uniform"
  kDeepSpeedParameters,  // partition_method="parameters"
  kDeepSpeedType,        // partition_method="type:REGEX"
  kBalanced,             // trainsim's exact min-max partition on simulated stage times
};

struct PartitionSpec {
  PartitionRule rule = PartitionRule::kUniform;
  std::string argument;  // the layout string or the type regex
};

/// Parses --partition; InputError naming `where` for an unknown rule or a malformed layout.
PartitionSpec parse_partition_spec(const std::string& text, const std::string& where);

/// The model's blocks as Megatron-LM and DeepSpeed order them (nanotron adds kCast before loss).
std::vector<Block> model_blocks(const Model& model, bool with_cast = false);

/// Megatron-LM's rule (per virtual stage with vp > 1). Without options: num_layers / pp per stage;
/// Megatron-Core versions before uneven-stage support computed num_layers // pp and silently built
/// fewer layers when pp does not divide them, which is reproduced (dropped_layers). With
/// --decoder-first/last-pipeline- num-layers the remaining layers are split evenly over the other
/// stages; with --account-for- embedding/loss-in-pipeline-split the embedding and the loss count as
/// one layer each. InputError (naming the flag) where Megatron-LM asserts.
Partition megatron_uniform_partition(const Model& model, const Plan& plan,
                                     const PlanOrigin& origin);

/// The virtual stages a Megatron-LM layout names (its | boundaries plus one, repetitions
/// unrolled): pp x vp, from which Megatron-LM derives vp. InputError at `where` for a layout
/// that expands beyond its bound.
std::int64_t megatron_layout_stage_count(const std::string& layout, const std::string& where);

/// A Megatron-LM layout: E embedding, t decoder layer, m multi-token-prediction module, L loss
/// (final norm, LM head, loss), | stage boundary, x*N and (...)*N repetition, commas ignored.
/// Must have pp stages, one E first and one L last, as many m as the model's mtp_layers, all in
/// one stage after every t (Megatron-Core's rules); fewer t than the model has layers is built as
/// written (dropped_layers).
Partition megatron_layout_partition(const Model& model, const std::string& layout, std::int64_t pp,
                                    std::int64_t vp, const std::string& where);

/// nanotron's compute costs per block: decoder 4 * heads * (hidden / heads) * hidden + 3 * ffn *
/// hidden, LM head padded_vocab * hidden, every other block 0 (models/llama.py).
std::vector<std::int64_t> nanotron_block_costs(const Model& model, const std::vector<Block>& blocks,
                                               std::int64_t padded_vocab);

/// nanotron's build_model: cumulative block costs against thresholds total * (rank + 1) / pp; a
/// block goes to the current rank, which advances once a block's cumulative cost exceeds its
/// threshold (at most one rank per block).
Partition nanotron_partition(const Model& model, std::int64_t pp, std::int64_t padded_vocab);

/// DeepSpeed's partition helpers (deepspeed/runtime/utils.py): parts[p] is the first item of
/// part p, parts[num_parts] == num_items.
std::vector<std::int64_t> deepspeed_partition_uniform(std::int64_t num_items,
                                                      std::int64_t num_parts);
/// DeepSpeed's original partition_balanced: binary search on the heaviest part (eps 1e-3) with a
/// greedy probe. It minimises the maximum and may leave the last parts empty (issue #5078);
/// DeepSpeed later replaced it with a dynamic program (PR #4312).
std::vector<std::int64_t> deepspeed_partition_balanced(const std::vector<std::int64_t>& weights,
                                                       std::int64_t num_parts);

/// Class names a DeepSpeed PipelineModule of Megatron-DeepSpeed's GPT gives the blocks (what
/// type:REGEX matches, case-insensitively).
std::string deepspeed_layer_name(const Model& model, BlockKind kind);
/// Checks a type:REGEX pattern: at most 256 characters, no number over 9 digits, a regular
/// expression without back-references (matched in polynomial time); InputError naming `where`.
void check_deepspeed_type_pattern(const std::string& pattern, const std::string& where);

/// DeepSpeed PipelineModule's _partition_layers over the layers embedding, decoders, final norm
/// and LM head (the loss function runs on the last stage). `layer_params` gives each layer's
/// parameter count for the "parameters" method.
Partition deepspeed_partition(const Model& model, const PartitionSpec& spec, std::int64_t pp,
                              const std::vector<std::int64_t>& layer_params);

/// trainsim's balanced rule over blocks taking `times` each: the bounds of the contiguous split
/// into `parts` stages (stage s holds [bounds[s], bounds[s+1])) whose slowest stage is the least
/// possible, each stage starting at the embedding, a decoder layer or the final norm and holding
/// a block with parameters. Layouts with the same slowest stage (within 1e-9 of it, so rounding
/// does not choose) are many where layers cost the same; of those it keeps the one whose stages
/// start earliest (least summed start), putting each layer that could go to either of two stages
/// on the later one, which 1F1B's warm-up leaves fewer micro-batches' activations in flight (with
/// interleaving, so within a chunk; across a chunk boundary the later stage is the first rank).
std::vector<std::int64_t> min_max_bounds(const std::vector<Block>& blocks,
                                         const std::vector<double>& times, std::int64_t parts);

/// The model as `partition` builds it: without the decoder layers the rule drops (the last ones,
/// as Megatron-LM builds layers 0 to n - 1), so that the model FLOPs of a step count the layers
/// the step runs.
Model built_model(Model model, const Partition& partition);

/// A partition from stage boundaries over `blocks`: stage s holds [bounds[s], bounds[s+1]).
Partition partition_from_bounds(std::string method, std::vector<Block> blocks,
                                const std::vector<std::int64_t>& bounds, std::int64_t chunks = 1);

}  // namespace trainsim
