#pragma once
// Every trainable tensor of a model, named as a Hugging Face checkpoint of its class names it
// (Model::architecture: Llama's names, Mixtral's for its experts, DeepSeek's for multi-head
// latent attention, shared experts and multi-token-prediction modules, Qwen3's q/k norms, Grok-1's
// port's, Qwen2-MoE's gated shared expert, GPT-OSS's and Llama 4's routers and experts), with its
// global shape and how tensor parallelism splits it. GPT-OSS and Llama 4 save every expert of a
// layer in one tensor ([E, hidden, 2 x ffn] for gate and up, [E, ffn, hidden] for down): each
// expert's slice is listed as a tensor of its own, "<name>[<expert>]", since expert parallelism
// places experts, not tensors. Megatron-LM and nanotron fuse q/k/v and gate/up into one tensor
// each; the rows each TP rank holds are the same, so shapes per rank and bytes are too.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"

namespace trainsim {

/// How tensor parallelism splits a tensor: column-parallel layers and the vocabulary-parallel
/// embedding and LM head along dim 0 (rows of the [out, in] weight), row-parallel layers along
/// dim 1; norms and row-parallel biases are replicated.
enum class TpSplit { kReplicated, kRows, kColumns };
const char* to_string(TpSplit split);

struct ParamSpec {
  std::string name;
  BlockKind block = BlockKind::kDecoder;
  std::int64_t layer = -1;          // decoder layer, -1 outside decoders
  std::vector<std::int64_t> shape;  // global, without vocabulary padding
  TpSplit split = TpSplit::kReplicated;
  bool vocabulary = false;  // dim 0 is the vocabulary: padded per the framework's rule
  /// A routed expert's index; -1 for every other tensor (a shared expert's too). Expert
  /// parallelism places a routed expert on one EP rank, and expert tensor parallelism splits it.
  std::int64_t expert = -1;
  bool is_expert() const { return expert >= 0; }
  /// "model.layers.*.mlp.down_proj.weight" for every decoder layer's copy of one tensor, and
  /// "experts.*" (or "[*]" for a fused tensor's slice) for every expert's.
  std::string kind() const;
  std::int64_t numel() const;
};

/// The model's tensors in the order a Llama-style model registers them: embedding, each decoder
/// layer, final norm, the multi-token-prediction modules, LM head (absent when tied). Their
/// element count is total_params(model), plus mtp_module_params(model) per module.
std::vector<ParamSpec> model_parameters(const Model& model);

}  // namespace trainsim
