// Saved shapes against the layout's prediction.
#include <algorithm>
#include <map>
#include <string_view>

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

// What a whole saved tensor must be: the model's shape, the dimension TP splits (none when
// replicated) and its padded extent there, whether that is the vocabulary, and the TP size.
struct WholeTensor {
  std::vector<std::int64_t> shape;
  std::optional<std::size_t> split;
  std::int64_t padded = 0;
  bool vocabulary = false;
  std::int64_t tp = 1;
};

WholeTensor whole_tensor(const LayoutShards& l, std::size_t i) {
  const ParamSpec& spec = l.params[i];
  WholeTensor w{spec.shape, std::nullopt, 0, spec.vocabulary, l.tp_of(i)};
  if (spec.split != TpSplit::kReplicated) {
    w.split = spec.split == TpSplit::kColumns ? 1 : 0;
    w.padded = l.placed[i].padded_shape[*w.split];
  }
  return w;
}

// "NAME in FILE is [..]": a saved tensor's shape, as a message quotes it.
std::string saved_shape(const SavedTensor& t) {
  return t.name + " in " + t.file + " is " + shape_text(t.shape);
}

// Whether two shapes have the same rank and agree on every dimension but `dim`.
bool equal_but(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b,
               std::size_t dim) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (i != dim && a[i] != b[i]) return false;
  }
  return true;
}

// A whole tensor (a Hugging Face save) against the model's shape.
std::optional<Diagnostic> check_whole(const SavedTensor& t, const WholeTensor& w) {
  if (t.shape == w.shape) return std::nullopt;
  const std::string saved = saved_shape(t);
  const std::string model = shape_text(w.shape);
  const std::size_t k = w.split.value_or(0);
  const bool others_match = equal_but(t.shape, w.shape, k);
  const std::int64_t tp = w.tp, padded = w.padded;
  if (others_match && w.split && t.shape[k] * tp == padded) {
    return error("saved-shard-not-tensor",
                 saved + ": one tensor-parallel shard, not the tensor: " +
                     std::to_string(t.shape[k]) + " x tp " + std::to_string(tp) + " = " +
                     std::to_string(padded) + (padded != w.shape[k] ? " padded" : "") +
                     " rows, the model's is " + model + ": the other " + std::to_string(tp - 1) +
                     " shards' rows are not in the checkpoint and a loader fails on the shape, or "
                     "worse, reads a model of " +
                     std::to_string(t.shape[k]) + " rows (ColossalAI issue #6108)",
                 "save the gathered tensor with the padding stripped: " + model + ", the " +
                     std::to_string(tp) + " shards concatenated along dim " +
                     std::to_string(static_cast<std::int64_t>(k)) + " and cut to " +
                     std::to_string(w.shape[k]));
  }
  if (others_match && w.vocabulary && t.shape[k] == padded) {
    return Diagnostic{"saved-with-padding", Severity::kWarning, std::nullopt,
                      saved + ": the vocabulary with its " + std::to_string(padded - w.shape[k]) +
                          " padding rows; a loader expecting the model's " + model +
                          " (Hugging Face, another TP) fails on the shape",
                      "strip rows " + std::to_string(w.shape[k]) + "-" +
                          std::to_string(padded - 1) + " when saving"};
  }
  return error("saved-shape-mismatch", saved + ", the model's is " + model,
               "check --model: the checkpoint is of another model");
}

// The slices "<name>[0]", "<name>[1]", ... of a tensor holding every routed expert of a layer
// (GPT-OSS's and Llama 4's experts.gate_up_proj, say); empty if `name` is no such tensor.
std::vector<std::size_t> fused_expert_slices(const std::string& name,
                                             const std::map<std::string, std::size_t>& by_name) {
  std::vector<std::size_t> out;
  for (auto it = by_name.find(name + "[0]"); it != by_name.end();
       it = by_name.find(name + "[" + std::to_string(out.size()) + "]")) {
    out.push_back(it->second);
  }
  return out;
}

// A saved tensor of every expert of a layer against the experts' slices: saved with the experts
// of one expert-parallel rank only, or as any whole tensor is.
std::optional<Diagnostic> check_fused_experts(const SavedTensor& t, const LayoutShards& l,
                                              const std::vector<std::size_t>& slices) {
  WholeTensor w = whole_tensor(l, slices.front());
  const std::int64_t experts = static_cast<std::int64_t>(slices.size());
  w.shape.insert(w.shape.begin(), experts);
  if (w.split) w.padded = w.shape[++*w.split];
  if (equal_but(t.shape, w.shape, 0) && t.shape[0] > 0 && t.shape[0] < experts &&
      experts % t.shape[0] == 0) {
    const std::int64_t ranks = experts / t.shape[0];
    return error("saved-experts-of-one-rank",
                 saved_shape(t) + ": " + std::to_string(t.shape[0]) + " of the layer's " +
                     std::to_string(experts) + " experts, one expert-parallel rank's at ep " +
                     std::to_string(ranks) + ", not the tensor " + shape_text(w.shape) +
                     ": the other " + std::to_string(ranks - 1) +
                     " ranks' experts are not in the checkpoint and a loader fails on the shape",
                 "gather the experts over the EP group before saving: " + shape_text(w.shape) +
                     ", the " + std::to_string(ranks) + " ranks' experts concatenated along dim 0");
  }
  return check_whole(t, w);
}

// GPT-OSS's released checkpoint holds its experts' weights in MXFP4 (OCP microscaling: 32
// 4-bit values to a block, one 8-bit exponent a block), [out, in] per expert: for a layer's
// [E, in, out] tensor, "<name>_blocks" [E, out, in / 32, 16] bytes and "<name>_scales"
// [E, out, in / 32].
std::optional<Diagnostic> check_mxfp4(const SavedTensor& t, const LayoutShards& l,
                                      const std::vector<std::size_t>& slices, bool blocks) {
  const std::vector<std::int64_t>& slice = l.params[slices.front()].shape;  // [in, out]
  std::vector<std::int64_t> want{static_cast<std::int64_t>(slices.size()), slice[1], slice[0] / 32};
  if (blocks) want.push_back(16);
  if (t.shape == want) return std::nullopt;
  return error("saved-shape-mismatch",
               saved_shape(t) + ", the model's is " + shape_text(want) + " (MXFP4 " +
                   (blocks ? "blocks" : "scales") + " of " + std::to_string(slices.size()) +
                   " experts' " + shape_text(slice) + ")",
               "check --model: the checkpoint is of another model");
}

// A saved tensor holding every routed expert of a layer, in the model's precision or as MXFP4
// blocks or scales: the experts' slices it stands for (none if it is no such tensor) and what is
// wrong with it.
struct FusedExperts {
  std::vector<std::size_t> slices;
  std::optional<Diagnostic> problem;
};

FusedExperts check_fused(const SavedTensor& t, const LayoutShards& l,
                         const std::map<std::string, std::size_t>& by_name) {
  FusedExperts f{fused_expert_slices(t.name, by_name), std::nullopt};
  if (!f.slices.empty()) {
    f.problem = check_fused_experts(t, l, f.slices);
    return f;
  }
  for (const bool blocks : {true, false}) {
    const std::string_view suffix = blocks ? "_blocks" : "_scales";
    if (!t.name.ends_with(suffix)) continue;
    f.slices = fused_expert_slices(t.name.substr(0, t.name.size() - suffix.size()), by_name);
    if (!f.slices.empty() && l.params[f.slices.front()].shape.size() == 2) {
      f.problem = check_mxfp4(t, l, f.slices, blocks);
      return f;
    }
    f.slices.clear();
  }
  return f;
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
               saved_shape(t) + "; at " + "tp " + std::to_string(tp) + " the layout predicts " +
                   shape_text(expected),
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
      FusedExperts fused = t.tp_size > 0 ? FusedExperts{} : check_fused(t, from, by_name);
      if (fused.slices.empty()) {
        ++unknown;
        continue;
      }
      if (fused.problem) out.push_back(std::move(*fused.problem));
      for (std::size_t i : fused.slices) seen[from.params[i].name] = true;
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
      d = check_whole(t, whole_tensor(from, it->second));
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
