#pragma once
// Megatron-Core's --recompute-modules: with --recompute selective, the parts of each decoder layer
// whose activations are dropped after the forward and rebuilt by running them again before the
// backward. A set of flags, written as Megatron names them, comma-separated.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainsim {

enum RecomputeModule : std::uint32_t {
  kRecomputeCoreAttn = 1u << 0,       // core_attn: the attention core (the default)
  kRecomputeLayernorm = 1u << 1,      // layernorm: the two norms before attention and MLP
  kRecomputeMlaUpProj = 1u << 2,      // mla_up_proj: MLA's up-projections and RoPE
  kRecomputeMlp = 1u << 3,            // mlp: a dense layer's MLP
  kRecomputeMoe = 1u << 4,            // moe: an MoE layer's whole MLP, dispatch included
  kRecomputeMoeAct = 1u << 5,         // moe_act: the routed experts' activation function
  kRecomputeSharedExperts = 1u << 6,  // shared_experts: the shared expert's MLP
};

/// The modules a text names ("mla_up_proj,mlp"), or nullopt when a name is unknown or repeated.
std::optional<std::uint32_t> parse_recompute_modules(std::string_view text);
/// The text of a set, in Megatron's order ("core_attn,mlp"); "" for none.
std::string recompute_modules_text(std::uint32_t modules);
/// Every name, for messages: "core_attn, layernorm, mla_up_proj, mlp, moe, moe_act,
/// shared_experts".
std::string recompute_module_names();

}  // namespace trainsim
