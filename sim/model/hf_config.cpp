// Hugging Face config.json read as-is. Only the keys that shape the architecture are read; a
// config carries many others (token ids, dtype, rope scaling) that do not change parameter
// counts or FLOPs, so unknown keys are ignored here, unlike in our own model files.
#include <filesystem>
#include <map>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/model/hf_reader.hpp"
#include "sim/model/model.hpp"

namespace trainsim {

using hf::got;
using hf::HfReader;

namespace {

// The name reports give a Hugging Face model: the hub id it was saved from (_name_or_path, its
// last part), else the file's own name, else (a file called config.json) its folder's.
std::string hf_model_name(const nlohmann::json& j, const std::string& file) {
  if (auto it = j.find("_name_or_path"); it != j.end() && it->is_string()) {
    std::string id = it->get<std::string>();
    while (!id.empty() && id.back() == '/') id.pop_back();
    if (const auto slash = id.find_last_of('/'); slash != std::string::npos) id.erase(0, slash + 1);
    if (!id.empty()) return id;
  }
  const std::filesystem::path p(file);
  if (p.stem() != "config") return p.stem().string();
  const std::string folder = p.parent_path().filename().string();
  return folder.empty() || folder == "." ? p.stem().string() : folder;
}

// Keys present in the config that change the cost of training but that this reader leaves out:
// noted on the model, so that a run says what its numbers do not include.
void note_unmodelled(HfReader& r, Model& m, const std::string& arch) {
  const bool reads_window = m.local_attention.kind != LocalAttention::Kind::kNone;
  const bool window_on = r.present("sliding_window") && r.boolean_or("use_sliding_window", true);
  if (window_on && !reads_window) {
    const std::int64_t window = r.integer("sliding_window");
    m.unmodelled.push_back(
        {r.note("sliding_window", "a sliding window of " + std::to_string(window) +
                                      " tokens is not modelled for " + arch +
                                      ": attention is costed over the whole sequence"),
         "read the attention time as an upper bound", window});
  }
}

// A rule of the model broken by what a config holds, named by the config's own key: the first of
// the Hugging Face names of the model JSON's `key` that the config holds, else the model's key
// as read from it.
ModelKeyPath hf_key_path(const nlohmann::json& j, const std::string& file) {
  return [&j, file](std::string_view key) {
    static const std::map<std::string_view, std::vector<const char*>> kHfNames = {
        {"num_kv_heads", {"num_key_value_heads"}},
        {"num_layers", {"num_hidden_layers"}},
        {"ffn_hidden_size", {"intermediate_size"}},
        {"moe.num_experts", {"num_local_experts", "n_routed_experts", "num_experts"}},
        {"moe.experts_per_token", {"num_experts_per_tok"}},
        {"moe.expert_ffn_hidden_size", {"moe_intermediate_size", "intermediate_size"}},
        {"moe.shared_expert_ffn_hidden_size", {"shared_expert_intermediate_size"}},
        {"moe.first_dense_layers", {"first_k_dense_replace"}},
        {"moe.layer_interval", {"decoder_sparse_step", "interleave_moe_layer_step"}},
        {"mla.q_lora_rank", {"q_lora_rank"}},
        {"mla.kv_lora_rank", {"kv_lora_rank"}},
        {"mla.qk_nope_head_dim", {"qk_nope_head_dim"}},
        {"mla.qk_rope_head_dim", {"qk_rope_head_dim"}},
        {"mla.v_head_dim", {"v_head_dim"}}};
    std::vector<std::string> names = {std::string(key)};
    if (auto it = kHfNames.find(key); it != kHfNames.end()) {
      names.assign(it->second.begin(), it->second.end());
    }
    for (const std::string& name : names) {
      if (j.is_object() && j.contains(name)) return file + ": $." + name;
    }
    return file + ": " + std::string(key) + " of the model read from it";
  };
}

}  // namespace

Model parse_hf_config(const nlohmann::json& j, const std::string& file) {
  JsonObject top(j, file);
  const auto& archs = top.raw("architectures");
  if (!archs.is_array() || archs.empty() || !archs[0].is_string()) {
    top.fail("architectures", "must be a non-empty array of strings, got " + got(archs));
  }
  const std::string arch = archs[0].get<std::string>();
  const hf::ArchitectureRead read = hf::require_architecture(top, "architectures", arch);
  HfReader r(j, file);
  Model m;
  m.source = "Hugging Face config.json (" + arch + ")";
  m.architecture = arch;
  read(r, m);
  if (m.head_dim == 0) {
    if (m.hidden_size % m.num_attention_heads != 0) {
      r.fail("hidden_size", "is not divisible by num_attention_heads and head_dim is missing");
    }
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }
  if (m.name.empty()) m.name = hf_model_name(j, file);
  note_unmodelled(r, m, arch);
  validate_model(m, hf_key_path(j, file));
  return m;
}

}  // namespace trainsim