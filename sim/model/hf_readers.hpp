#pragma once
// The readers of each Hugging Face architecture (hf_dense_readers.cpp, hf_gemma_readers.cpp,
// hf_moe_readers.cpp), for the table in hf_architectures.cpp; and the pieces several share.
#include "sim/model/hf_reader.hpp"

namespace trainsim::hf {

/// The MLP's kind from the activation under `key` (gated: a GLU of that activation).
FfnKind activation_kind(HfReader& r, const char* key, const char* fallback, bool gated);
/// Llama's keys: sizes, GQA heads, RMSNorm, RoPE, a gated MLP; Qwen2's Q/K/V biases if `qwen2`.
void read_llama_like(HfReader& r, Model& m, bool qwen2);
/// A sliding window over every layer, or over those "layer_types" names.
void read_sliding_window(HfReader& r, Model& m);

void read_llama(HfReader& r, Model& m);
void read_mistral(HfReader& r, Model& m);
void read_qwen2(HfReader& r, Model& m);
void read_qwen3_dense(HfReader& r, Model& m);
void read_gpt2(HfReader& r, Model& m);
void read_gpt_neox(HfReader& r, Model& m);
void read_nemotron(HfReader& r, Model& m);
void read_phi3(HfReader& r, Model& m);
void read_olmo2(HfReader& r, Model& m);
void read_gemma(HfReader& r, Model& m);
void read_gemma2(HfReader& r, Model& m);
void read_gemma3_text(HfReader& r, Model& m);
void read_gemma3_multimodal(HfReader& r, Model& m);

void read_mixtral(HfReader& r, Model& m);
void read_qwen2_moe(HfReader& r, Model& m);
void read_qwen3_moe(HfReader& r, Model& m);
void read_deepseek(HfReader& r, Model& m);
void read_llama4_text(HfReader& r, Model& m);
void read_llama4_multimodal(HfReader& r, Model& m);
void read_gpt_oss(HfReader& r, Model& m);
void read_grok1(HfReader& r, Model& m);
void read_olmoe(HfReader& r, Model& m);
void read_glm4_moe(HfReader& r, Model& m);

}  // namespace trainsim::hf
