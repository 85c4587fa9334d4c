#include "sim/reshard/parameters.hpp"

namespace trainsim {

const char* to_string(TpSplit split) {
  switch (split) {
    case TpSplit::kReplicated:
      return "replicated";
    case TpSplit::kRows:
      return "dim 0";
    case TpSplit::kColumns:
      return "dim 1";
  }
  return "?";
}

std::string ParamSpec::kind() const {
  if (layer < 0) return name;
  const std::string prefix = "model.layers." + std::to_string(layer) + ".";
  return "model.layers.*." + name.substr(prefix.size());
}

std::int64_t ParamSpec::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

namespace {

struct LayerBuilder {
  const Model& m;
  std::int64_t layer;
  std::vector<ParamSpec>& out;

  void add(const std::string& suffix, std::vector<std::int64_t> shape, TpSplit split) {
    out.push_back({"model.layers." + std::to_string(layer) + "." + suffix, BlockKind::kDecoder,
                   layer, std::move(shape), split, false});
  }
  void norm(const std::string& name) {
    add(name + ".weight", {m.hidden_size}, TpSplit::kReplicated);
    if (m.norm == NormKind::kLayerNorm) add(name + ".bias", {m.hidden_size}, TpSplit::kReplicated);
  }
  void attention() {
    const std::int64_t h = m.hidden_size;
    for (const auto& [proj, width] :
         {std::pair{"q_proj", m.q_size()}, {"k_proj", m.kv_size()}, {"v_proj", m.kv_size()}}) {
      add(std::string("self_attn.") + proj + ".weight", {width, h}, TpSplit::kRows);
      if (m.qkv_bias) add(std::string("self_attn.") + proj + ".bias", {width}, TpSplit::kRows);
    }
    add("self_attn.o_proj.weight", {h, m.q_size()}, TpSplit::kColumns);
    if (m.attention_output_bias) add("self_attn.o_proj.bias", {h}, TpSplit::kReplicated);
  }
  // One MLP (or one expert: `prefix` "block_sparse_moe.experts.E.", Mixtral's w1/w3/w2).
  void mlp(const std::string& prefix, std::int64_t ffn, bool mixtral) {
    const std::int64_t h = m.hidden_size;
    const bool gated = is_gated(m.ffn_kind);
    const std::string gate = mixtral ? "w1" : "gate_proj";
    const std::string up = mixtral ? "w3" : "up_proj";
    const std::string down = mixtral ? "w2" : "down_proj";
    if (gated) add(prefix + gate + ".weight", {ffn, h}, TpSplit::kRows);
    add(prefix + up + ".weight", {ffn, h}, TpSplit::kRows);
    if (m.mlp_bias) {
      if (gated) add(prefix + gate + ".bias", {ffn}, TpSplit::kRows);
      add(prefix + up + ".bias", {ffn}, TpSplit::kRows);
    }
    add(prefix + down + ".weight", {h, ffn}, TpSplit::kColumns);
    if (m.mlp_bias) add(prefix + down + ".bias", {h}, TpSplit::kReplicated);
  }
};

}  // namespace

std::vector<ParamSpec> model_parameters(const Model& m) {
  std::vector<ParamSpec> out;
  const std::int64_t h = m.hidden_size;
  out.push_back({"model.embed_tokens.weight",
                 BlockKind::kEmbedding,
                 -1,
                 {m.vocab_size, h},
                 TpSplit::kRows,
                 true});
  if (m.position_embedding == PositionEmbedding::kLearned) {
    out.push_back({"model.embed_positions.weight",
                   BlockKind::kEmbedding,
                   -1,
                   {m.max_position_embeddings, h},
                   TpSplit::kReplicated,
                   false});
  }
  for (std::int64_t l = 0; l < m.num_layers; ++l) {
    LayerBuilder b{m, l, out};
    b.norm("input_layernorm");
    b.attention();
    b.norm("post_attention_layernorm");
    if (m.moe.is_moe()) {
      b.add("block_sparse_moe.gate.weight", {m.moe.num_experts, h}, TpSplit::kReplicated);
      for (std::int64_t e = 0; e < m.moe.num_experts; ++e) {
        b.mlp("block_sparse_moe.experts." + std::to_string(e) + ".", m.moe.expert_ffn_hidden_size,
              true);
      }
    } else {
      b.mlp("mlp.", m.ffn_hidden_size, false);
    }
  }
  out.push_back({"model.norm.weight", BlockKind::kFinalNorm, -1, {h}, TpSplit::kReplicated, false});
  if (m.norm == NormKind::kLayerNorm) {
    out.push_back({"model.norm.bias", BlockKind::kFinalNorm, -1, {h}, TpSplit::kReplicated, false});
  }
  if (!m.tied_embeddings) {
    out.push_back(
        {"lm_head.weight", BlockKind::kLmHead, -1, {m.vocab_size, h}, TpSplit::kRows, true});
  }
  return out;
}

}  // namespace trainsim
