// Saved shapes against the layout's prediction.
#include <map>

#include "sim/check/wording.hpp"
#include "sim/core/format.hpp"
#include "sim/reshard/checkpoint.hpp"

namespace trainsim {

namespace {

// nanotron's names for the Llama tensors trainsim knows (models/llama.py), with the q/k/v and
// gate/up tensors fused; "" when the name is not one of them.
std::string hf_name(const std::string& nanotron, std::vector<std::string>& fused) {
  static const std::map<std::string, std::string> fixed = {
      {"token_position_embeddings.pp_block.token_embedding.weight", "model.embed_tokens.weight"},
      {"lm_head.pp_block.weight", "lm_head.weight"},
      {"final_layer_norm.pp_block.weight", "model.norm.weight"}};
  if (auto it = fixed.find(nanotron); it != fixed.end()) return it->second;
  const std::string prefix = "decoder.";
  if (nanotron.rfind(prefix, 0) != 0) return "";
  const std::size_t dot = nanotron.find('.', prefix.size());
  if (dot == std::string::npos) return "";
  const std::string layer = "model.layers." + nanotron.substr(prefix.size(), dot - prefix.size());
  const std::string rest = nanotron.substr(dot + 1);
  static const std::map<std::string, std::vector<std::string>> parts = {
      {"pp_block.input_layernorm.weight", {"input_layernorm.weight"}},
      {"pp_block.post_attention_layernorm.weight", {"post_attention_layernorm.weight"}},
      {"pp_block.attn.o_proj.weight", {"self_attn.o_proj.weight"}},
      {"pp_block.mlp.down_proj.weight", {"mlp.down_proj.weight"}},
      {"pp_block.attn.qkv_proj.weight",
       {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"}},
      {"pp_block.mlp.gate_up_proj.weight", {"mlp.gate_proj.weight", "mlp.up_proj.weight"}}};
  auto it = parts.find(rest);
  if (it == parts.end()) return "";
  fused.clear();
  for (const auto& p : it->second) fused.push_back(layer + "." + p);
  return fused.front();
}

Diagnostic error(std::string id, std::string message, std::string fix) {
  return {std::move(id), Severity::kError, std::nullopt, std::move(message), std::move(fix)};
}

// A whole tensor (a Hugging Face save) against the model's shape.
std::optional<Diagnostic> check_whole(const SavedTensor& t, const ParamSpec& spec,
                                      const PlacedParam& placed, std::int64_t tp) {
  if (t.shape == spec.shape) return std::nullopt;
  const std::string saved = t.name + " in " + t.file + " is " + shape_text(t.shape);
  const std::string model = shape_text(spec.shape);
  const std::size_t k = spec.split == TpSplit::kColumns ? 1 : 0;
  bool others_match = t.shape.size() == spec.shape.size();
  for (std::size_t i = 0; others_match && i < t.shape.size(); ++i) {
    if (i != k && t.shape[i] != spec.shape[i]) others_match = false;
  }
  const std::int64_t padded = placed.padded_shape[k];
  if (others_match && spec.split != TpSplit::kReplicated && t.shape[k] * tp == padded) {
    return error("saved-shard-not-tensor",
                 saved + ": one tensor-parallel shard, not the tensor: " +
                     std::to_string(t.shape[k]) + " x tp " + std::to_string(tp) + " = " +
                     std::to_string(padded) + (padded != spec.shape[k] ? " padded" : "") +
                     " rows, the model's is " + model + ": the other " + std::to_string(tp - 1) +
                     " shards' rows are not in the checkpoint and a loader fails on the shape, or "
                     "worse, reads a model of " +
                     std::to_string(t.shape[k]) + " rows (ColossalAI issue #6108)",
                 "save the gathered tensor with the padding stripped: " + model + ", the " +
                     std::to_string(tp) + " shards concatenated along dim " +
                     std::to_string(static_cast<std::int64_t>(k)) + " and cut to " +
                     std::to_string(spec.shape[k]));
  }
  if (others_match && spec.vocabulary && t.shape[k] == padded) {
    return Diagnostic{"saved-with-padding", Severity::kWarning, std::nullopt,
                      saved + ": the vocabulary with its " +
                          std::to_string(padded - spec.shape[k]) +
                          " padding rows; a loader expecting the model's " + model +
                          " (Hugging Face, another TP) fails on the shape",
                      "strip rows " + std::to_string(spec.shape[k]) + "-" +
                          std::to_string(padded - 1) + " when saving"};
  }
  return error("saved-shape-mismatch", saved + ", the model's is " + model,
               "check --model: the checkpoint is of another model");
}

// One TP shard (nanotron's files) against the shard the layout predicts.
std::optional<Diagnostic> check_shard(const SavedTensor& t, std::vector<std::int64_t> expected,
                                      std::int64_t tp) {
  if (t.tp_size != tp) {
    return error("checkpoint-layout-mismatch",
                 t.file + " is tp rank " + std::to_string(t.tp_rank) + " of " +
                     std::to_string(t.tp_size) + ", but --from says tp " + std::to_string(tp),
                 "--from with tp=" + std::to_string(t.tp_size));
  }
  if (t.shape == expected) return std::nullopt;
  return error("saved-shape-mismatch",
               t.name + " in " + t.file + " is " + shape_text(t.shape) + "; at " + "tp " +
                   std::to_string(tp) + " the layout predicts " + shape_text(expected),
               "check --model and --from against the run that saved it");
}

std::vector<std::int64_t> fused_shard_shape(const LayoutShards& l,
                                            const std::map<std::string, std::size_t>& by_name,
                                            const std::vector<std::string>& parts,
                                            std::int64_t tp_rank) {
  std::vector<std::int64_t> shape;
  for (const auto& p : parts) {
    const auto& s = l.placed[by_name.at(p)].shards[static_cast<std::size_t>(tp_rank)].shape;
    if (shape.empty()) {
      shape = s;
    } else {
      shape[0] += s[0];
    }
  }
  return shape;
}

}  // namespace

std::vector<Diagnostic> compare_checkpoint(const CheckpointListing& ckpt,
                                           const LayoutShards& from) {
  std::map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < from.params.size(); ++i) by_name[from.params[i].name] = i;
  std::vector<Diagnostic> out;
  std::map<std::string, bool> seen;
  std::int64_t unknown = 0;
  std::vector<std::string> parts;
  for (const auto& t : ckpt.tensors) {
    std::string name = t.name;
    parts.clear();
    if (t.tp_size > 0)
      name = hf_name(t.name.rfind("model.", 0) == 0 ? t.name.substr(6) : t.name, parts);
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      ++unknown;
      continue;
    }
    std::optional<Diagnostic> d;
    if (t.tp_size > 0) {
      if (t.tp_rank < 0 || t.tp_rank >= from.plan.tp || t.tp_size != from.plan.tp) {
        d = check_shard(t, {}, from.plan.tp);
      } else {
        d = check_shard(t, fused_shard_shape(from, by_name, parts, t.tp_rank), from.plan.tp);
      }
      for (const auto& p : parts) seen[p] = true;
    } else {
      d = check_whole(t, from.params[it->second], from.placed[it->second], from.plan.tp);
      seen[name] = true;
    }
    if (d) out.push_back(std::move(*d));
  }
  if (!seen.empty()) {
    std::vector<std::string> missing;
    for (const auto& p : from.params) {
      if (!seen.count(p.name)) missing.push_back(p.name);
    }
    if (!missing.empty()) {
      const std::size_t shown = std::min<std::size_t>(missing.size(), 3);
      std::vector<std::string> first(missing.begin(), missing.begin() + static_cast<long>(shown));
      out.push_back({"checkpoint-missing-tensors", Severity::kWarning, std::nullopt,
                     std::to_string(static_cast<std::int64_t>(missing.size())) +
                         " of the model's " +
                         std::to_string(static_cast<std::int64_t>(from.params.size())) +
                         " tensors are not in the checkpoint (" + and_list(first) +
                         (missing.size() > shown ? ", ..." : "") + ")",
                     "check --model and that every file of the checkpoint is in the directory"});
    }
  }
  if (unknown > 0) {
    out.push_back({"checkpoint-unrecognised-tensors", Severity::kInfo, std::nullopt,
                   std::to_string(unknown) +
                       " saved tensors have names trainsim does not map to the model's "
                       "(not compared)",
                   ""});
  }
  return out;
}

}  // namespace trainsim
