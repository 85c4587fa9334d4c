// Megatron-LM's uniform layer-to-stage rule with its uneven-stage options
// (megatron/core/transformer/transformer_block.py, get_num_layers_to_build); explicit layouts
// are in partition_layout.cpp.
#include <algorithm>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/plan/partition.hpp"

namespace trainsim {

namespace {

// Virtual stage s holds counts[s] decoders; the embedding goes first, the multi-token-prediction
// modules and the loss blocks last (Megatron-Core builds the modules on the last stage).
Partition from_decoder_counts(std::string method, const std::vector<std::int64_t>& counts,
                              std::int64_t model_layers, std::int64_t chunks, std::int64_t mtp) {
  std::int64_t built = 0;
  for (auto c : counts) built += c;
  Partition p;
  p.method = std::move(method);
  p.chunks = chunks;
  p.blocks.push_back({BlockKind::kEmbedding});
  for (std::int64_t l = 0; l < built; ++l) p.blocks.push_back({BlockKind::kDecoder, l});
  for (std::int64_t k = 0; k < mtp; ++k) p.blocks.push_back({BlockKind::kMtp, k});
  p.blocks.push_back({BlockKind::kFinalNorm});
  p.blocks.push_back({BlockKind::kLmHead});
  p.blocks.push_back({BlockKind::kLoss});
  p.dropped_layers = model_layers - built;
  std::int64_t next = 1;  // first decoder block
  const auto stages = static_cast<std::int64_t>(counts.size());
  for (std::int64_t s = 0; s < stages; ++s) {
    std::int64_t begin = s == 0 ? 0 : next;
    next += counts[static_cast<std::size_t>(s)];
    std::int64_t end = s == stages - 1 ? static_cast<std::int64_t>(p.blocks.size()) : next;
    p.stages.push_back({begin, end});
  }
  return p;
}

// Whether `layers` split evenly over the vp model chunks of a physical stage; Megatron-Core's
// TransformerConfig raises otherwise (core_r0.12).
void require_chunks_divide(std::int64_t layers, std::int64_t vp, const std::string& where,
                           const std::string& field) {
  if (vp > 1 && layers % vp != 0) {
    fail_input(field, "puts " + std::to_string(layers) + " layers on " + where +
                          ", which Megatron-LM requires to be divisible by vp (" +
                          std::to_string(vp) + ")");
  }
}

// Decoders per virtual stage under --decoder-first/last-pipeline-num-layers: the physical stages
// they name get those counts and the others divide the rest evenly; with interleaving each
// physical stage's count is split evenly over its vp chunks (Megatron-Core's
// get_num_layers_to_build and get_transformer_layer_offset, core_r0.12).
std::vector<std::int64_t> counts_with_uneven_ends(const Model& model, const Plan& plan,
                                                  const PlanOrigin& origin) {
  const std::int64_t L = model.num_layers;
  const std::int64_t v = plan.vp;
  const std::int64_t pp = plan.pp;
  const std::int64_t first = plan.decoder_first_pipeline_num_layers;
  const std::int64_t last = plan.decoder_last_pipeline_num_layers;
  const char* name =
      first >= 0 ? "decoder_first_pipeline_num_layers" : "decoder_last_pipeline_num_layers";
  const std::string field = origin.of(name);
  if (plan.account_for_embedding_in_pipeline_split || plan.account_for_loss_in_pipeline_split) {
    fail_input(field,
               "cannot be combined with --account-for-embedding/loss-in-pipeline-split "
               "(Megatron-LM rejects both together)");
  }
  if (pp < 2) fail_input(field, "needs at least 2 pipeline stages");
  if (first >= 0) {
    require_chunks_divide(first, v, "the first stage",
                          origin.of("decoder_first_pipeline_num_layers"));
  }
  if (last >= 0) {
    require_chunks_divide(last, v, "the last stage", origin.of("decoder_last_pipeline_num_layers"));
  }
  const std::int64_t rest = L - std::max<std::int64_t>(first, 0) - std::max<std::int64_t>(last, 0);
  const std::int64_t stages_left = pp - (first >= 0 ? 1 : 0) - (last >= 0 ? 1 : 0);
  if (rest < 0)
    fail_input(field, "asks for more layers than the model has (" + std::to_string(L) + ")");
  std::int64_t per = 0;
  if (stages_left > 0) {
    if (rest % stages_left != 0) {
      fail_input(field, "leaves " + std::to_string(rest) + " layers for " +
                            std::to_string(stages_left) +
                            " other stages; Megatron-LM requires them to divide evenly");
    }
    per = rest / stages_left;
    require_chunks_divide(per, v, "each middle stage", field);
  } else if (rest != 0) {
    fail_input(field, "with 2 stages the first and last counts must add up to " +
                          std::to_string(L) + " layers, got " + std::to_string(L - rest));
  }
  // Virtual stage k is chunk k / pp of physical stage k % pp (partition.hpp).
  std::vector<std::int64_t> counts(static_cast<std::size_t>(pp * v), per / v);
  for (std::int64_t chunk = 0; chunk < v; ++chunk) {
    if (first >= 0) counts[static_cast<std::size_t>(chunk * pp)] = first / v;
    if (last >= 0) counts[static_cast<std::size_t>(chunk * pp + pp - 1)] = last / v;
  }
  return counts;
}

// Decoders per virtual stage under --account-for-embedding/loss-in-pipeline-split: the embedding
// and the loss count as a layer each and every stage takes the same number of layers.
std::vector<std::int64_t> counts_with_embedding_and_loss(const Model& model, const Plan& plan,
                                                         const PlanOrigin& origin) {
  const bool emb = plan.account_for_embedding_in_pipeline_split;
  const bool loss = plan.account_for_loss_in_pipeline_split;
  const std::int64_t p = plan.pp * plan.vp;
  const std::int64_t units = model.num_layers + (emb ? 1 : 0) + (loss ? 1 : 0);
  const char* field =
      emb ? "account_for_embedding_in_pipeline_split" : "account_for_loss_in_pipeline_split";
  if (units % plan.pp != 0) {
    fail_input(origin.of(field), "makes " + std::to_string(units) +
                                     " layers (decoders plus embedding/loss), which Megatron-LM "
                                     "requires to be divisible by pp (" +
                                     std::to_string(plan.pp) + ")");
  }
  require_chunks_divide(units / plan.pp, plan.vp, "each stage (embedding/loss included)",
                        origin.of(field));
  std::vector<std::int64_t> counts(static_cast<std::size_t>(p), units / p);
  if (emb) counts.front() -= 1;
  if (loss) counts.back() -= 1;
  if (counts.front() < 0 || counts.back() < 0) {
    fail_input(origin.of(field), "leaves no room for the embedding or loss on its stage");
  }
  return counts;
}

}  // namespace

Partition megatron_uniform_partition(const Model& model, const Plan& plan,
                                     const PlanOrigin& origin) {
  const std::int64_t L = model.num_layers;
  const std::int64_t p = plan.pp * plan.vp;  // virtual stages
  std::vector<std::int64_t> counts;
  if (plan.decoder_first_pipeline_num_layers >= 0 || plan.decoder_last_pipeline_num_layers >= 0) {
    counts = counts_with_uneven_ends(model, plan, origin);
  } else if (plan.account_for_embedding_in_pipeline_split ||
             plan.account_for_loss_in_pipeline_split) {
    counts = counts_with_embedding_and_loss(model, plan, origin);
  } else {
    // Plain rule: num_layers // pp per stage (any remainder is not built).
    counts.assign(static_cast<std::size_t>(p), L / p);
  }
  return from_decoder_counts("uniform", counts, L, plan.vp, model.mtp_layers);
}

}  // namespace trainsim
