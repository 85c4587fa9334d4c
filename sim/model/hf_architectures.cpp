// The table of architectures a Hugging Face config.json may name, and their readers
// (hf_dense_readers.cpp, hf_gemma_readers.cpp, hf_moe_readers.cpp).
#include "sim/model/hf_readers.hpp"

namespace trainsim::hf {

namespace {

// Each architecture a config may name (its first "architectures" entry) and its reader; the
// unsupported-architecture message lists the named ones in this order (aliases unlisted).
struct ArchitectureReader {
  const char* architecture;
  void (*read)(HfReader&, Model&);
  bool listed = true;
};

const ArchitectureReader kArchitectures[] = {
    {"LlamaForCausalLM", read_llama},
    {"MistralForCausalLM", read_mistral},
    {"MixtralForCausalLM", read_mixtral},
    {"Qwen2ForCausalLM", read_qwen2},
    {"Qwen2MoeForCausalLM", read_qwen2_moe},
    {"Qwen3ForCausalLM", read_qwen3_dense},
    {"Qwen3MoeForCausalLM", read_qwen3_moe},
    {"DeepseekV2ForCausalLM", read_deepseek},
    {"DeepseekV3ForCausalLM", read_deepseek},
    {"Llama4ForConditionalGeneration", read_llama4_multimodal},
    {"Llama4ForCausalLM", read_llama4_text},
    {"GptOssForCausalLM", read_gpt_oss},
    {"Grok1ModelForCausalLM", read_grok1},
    {"Grok1ForCausalLM", read_grok1, false},
    {"GPT2LMHeadModel", read_gpt2},
    {"GPTNeoXForCausalLM", read_gpt_neox},
    {"NemotronForCausalLM", read_nemotron},
    {"Phi3ForCausalLM", read_phi3},
    {"Olmo2ForCausalLM", read_olmo2},
    {"GemmaForCausalLM", read_gemma},
    {"Gemma2ForCausalLM", read_gemma2},
    {"Gemma3ForCausalLM", read_gemma3_text},
    {"Gemma3ForConditionalGeneration", read_gemma3_multimodal},
    {"OlmoeForCausalLM", read_olmoe},
    {"Glm4MoeForCausalLM", read_glm4_moe},
};

}  // namespace

ArchitectureRead require_architecture(const JsonObject& o, std::string_view key,
                                      const std::string& architecture) {
  std::string supported;
  for (const auto& a : kArchitectures) {
    if (architecture == a.architecture) return a.read;
    if (!a.listed) continue;
    if (!supported.empty()) supported += ", ";
    supported += a.architecture;
  }
  o.fail(key, "unsupported architecture \"" + architecture + "\" (supported: " + supported + ")");
}

}  // namespace trainsim::hf
