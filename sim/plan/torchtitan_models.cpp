// What a torchtitan config's [model] trains: the catalog model of its name and flavor, where
// torchtitan's flavor differs from that model as released, and the mixture-of-experts settings of
// [parallelism] as torchtitan applies them (expert parallelism only on MoE models, expert TP 1 or
// tp). Flavors read from torchtitan's model registries of the TOML configs' era (before its
// config refactor, torchtitan#2386).
#include <map>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/torchtitan_reader.hpp"

namespace trainsim {

namespace {

struct Flavor {
  std::string catalog;
  /// attn_type "flex" with attn_mask_type "block_causal": each token attends within its own
  /// document of the packed sequence.
  bool block_causal = false;
  /// Every layer attends over the whole sequence where the released model chunks it.
  bool global_attention = false;
  /// The flavor builds no multi-token-prediction module the catalog model has.
  bool no_mtp = false;
};

const std::map<std::pair<std::string, std::string>, Flavor>& flavors() {
  static const std::map<std::pair<std::string, std::string>, Flavor> kFlavors = {
      {{"llama3", "8B"}, {"llama3.1-8b"}},
      {{"llama3", "70B"}, {"llama3.1-70b"}},
      {{"llama3", "405B"}, {"llama3.1-405b"}},
      {{"llama2", "7B"}, {"llama2-7b"}},
      {{"llama2", "70B"}, {"llama2-70b"}},
      // llama4/__init__.py: 17bx128e sets no every_n_layers_nope, so no chunked attention.
      {{"llama4", "17bx128e"}, {"llama4-maverick", false, true}},
      // deepseek_v3/__init__.py: flex attention with a block-causal mask; no MTP module.
      {{"deepseek_v3", "671B"}, {"deepseek-v3", true, false, true}},
      // The 16B and 236B flavors: DeepSeek-V2-Lite's and DeepSeek-V2's shapes and routers.
      {{"deepseek_v3", "16B"}, {"deepseek-v2-lite", true}},
      {{"deepseek_v3", "236B"}, {"deepseek-v2", true}},
      {{"qwen3", "30B-A3B"}, {"qwen3-30b-a3b"}},
      {{"qwen3", "235B-A22B"}, {"qwen3-235b-a22b"}}};
  return kFlavors;
}

std::pair<std::string, std::string> name_and_flavor(JsonObject& m) {
  return {m.optional_string("name").value_or("llama3"),
          m.optional_string("flavor").value_or("debugmodel")};
}

}  // namespace

std::string torchtitan_catalog_model(const nlohmann::json& config, const std::string& file) {
  JsonObject top(config, file);
  JsonObject m = torchtitan::table(top, "model");
  const auto [name, flavor] = name_and_flavor(m);
  const auto it = flavors().find({name, flavor});
  if (it == flavors().end()) {
    std::vector<std::string> known;
    for (const auto& [k, v] : flavors()) known.push_back(k.first + " " + k.second);
    m.fail(m.has("flavor") ? "flavor" : "name",
           "torchtitan's " + name + " " + flavor + " is not one trainsim's catalog holds (" +
               join(known, ", ") +
               "): give the model with --model M (a catalog name or a config.json)");
  }
  return it->second.catalog;
}

namespace torchtitan {

void flavor_differences(JsonObject& top, const Model& model, std::int64_t seq_len, Reader& r) {
  JsonObject m = table(top, "model");
  const auto [name, flavor] = name_and_flavor(m);
  const auto it = flavors().find({name, flavor});
  // A model of its own (--model) is priced as given.
  if (it == flavors().end() || it->second.catalog != model.name) return;
  const Flavor& f = it->second;
  const std::string key = m.has("flavor") ? "flavor" : "name";
  if (f.no_mtp && model.mtp_layers > 0 && !r.flagged("mtp_num_layers")) {
    r.set(m, key, "mtp_num_layers", "0");
  }
  if (f.block_causal && !r.flagged("packed_document_tokens")) {
    r.note(m.where(key) +
           ": FlexAttention's block-causal mask (each token within its own "
           "document) is priced as causal attention over the whole sequence; "
           "give --packed-document-tokens E[l^2]/E[l] of the data's documents");
  }
  const auto& local = model.local_attention;
  if (f.global_attention && local.kind != LocalAttention::Kind::kNone && seq_len > local.size) {
    m.fail(key, "torchtitan's " + name + " " + flavor +
                    " attends over the whole sequence on every layer, where " + model.name +
                    " chunks it to " + std::to_string(local.size) +
                    " tokens: the two agree up to seq_len " + std::to_string(local.size) +
                    " (got " + std::to_string(seq_len) + "); give --model a config.json");
  }
}

void experts(JsonObject& p, const Degrees& d, const Model& model, Reader& r) {
  const std::string ep_key = "expert_parallel_degree";
  const std::string etp_key = "expert_tensor_parallel_degree";
  const std::int64_t ep = integer_or(p, ep_key, 1);
  const std::int64_t etp = integer_or(p, etp_key, 1);
  if (!model.moe.is_moe()) {
    if (ep > 1 || p.has(etp_key)) {
      r.note(p.where(ep > 1 ? ep_key : etp_key) + ": no effect on " + model.name +
             ", a dense model (as in torchtitan)");
    }
    return;
  }
  // With ep 1 torchtitan splits the experts over tp like the dense MLP: trainsim's default.
  if (ep == 1) return;
  if (etp != 1 && etp != d.tp) {
    p.fail(etp_key, "must be 1 or tensor_parallel_degree (" + std::to_string(d.tp) +
                        ") with expert parallelism, as torchtitan asks, got " +
                        std::to_string(etp));
  }
  // The expert mesh (efsdp, ep, etp) re-divides shard x cp x tp; the replicas stay apart.
  const std::int64_t ranks = d.shard * d.cp * d.tp;
  if (ranks % (ep * etp) != 0) {
    p.fail(ep_key, "x " + etp_key + " (" + std::to_string(ep) + " x " + std::to_string(etp) +
                       ") must divide data_parallel_shard_degree x context_parallel_degree x "
                       "tensor_parallel_degree = " +
                       std::to_string(ranks) + ", torchtitan's expert mesh");
  }
  r.set(p, ep_key, "ep", std::to_string(ep));
  r.set(p, etp_key, "etp", std::to_string(etp));
  const std::string backend = "expert_parallel_comm_backend";
  if (p.optional_choice(backend, {"standard", "deepep"}).value_or("standard") == "deepep") {
    r.note(p.where(backend) + ": DeepEP's kernels are priced as NCCL's all-to-all");
  }
}

}  // namespace torchtitan
}  // namespace trainsim
