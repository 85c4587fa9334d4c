#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/model/flops.hpp"
#include "sim/model/params.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::vector<std::string> kCatalog = {
    "llama2-7b",      "llama2-70b",        "llama3-8b",      "llama3.1-8b",
    "llama3.1-70b",   "llama3.1-405b",     "gpt3-175b",      "nemotron4-15b",
    "nemotron4-340b", "mixtral-8x7b",      "mixtral-8x22b",  "deepseek-v3",
    "grok-1",         "llama4-maverick",   "qwen3-30b-a3b",  "qwen3-235b-a22b",
    "gpt-oss-120b",   "qwen1.5-moe-a2.7b", "qwen2-57b-a14b", "deepseek-v2-lite",
    "deepseek-v2"};

TEST(ModelCatalog, HasTheNamedModels) {
  ::setenv("TRAINSIM_DATA_DIR", test::source_dir().c_str(), 1);
  auto names = catalog_names("models");
  for (const auto& n : kCatalog) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    EXPECT_EQ(test::catalog_model(n).name, n);
  }
}

// Every published count recorded in the catalog, to its published precision: rounded to
// rounded_to, or cut to it where the publisher truncates.
void expect_published(const std::string& model, const char* what, std::int64_t ours,
                      std::int64_t published, const PublishedParams& p) {
  if (published <= 0) return;
  const double diff = static_cast<double>(ours - published);
  const auto unit = static_cast<double>(p.rounded_to);
  if (p.truncated) {
    EXPECT_TRUE(diff >= 0 && diff < unit) << model << " " << what << " " << ours;
  } else {
    EXPECT_LE(std::abs(diff), unit / 2) << model << " " << what << " " << ours;
  }
}

TEST(ModelCatalog, ParameterCountsMatchPublishedOnes) {
  for (const auto& n : kCatalog) {
    const Model m = test::catalog_model(n);
    ASSERT_TRUE(m.published.any()) << n;
    const auto c = count_params(m);
    const auto total = c.total(m.num_layers);
    const auto embedding = c.embedding() + c.lm_head;
    const auto& p = m.published;
    expect_published(n, "total", total, p.total, p);
    expect_published(n, "embedding", embedding, p.embedding, p);
    expect_published(n, "non-embedding", total - embedding, p.non_embedding, p);
    const std::int64_t input = m.tied_embeddings ? 0 : c.embedding();
    expect_published(n, "active", active_params(m) + (p.active_with_embedding ? input : 0),
                     p.active, p);
  }
}

TEST(ModelCatalog, ExactCounts) {
  EXPECT_EQ(total_params(test::catalog_model("llama3.1-8b")), 8'030'261'248);
  EXPECT_EQ(total_params(test::catalog_model("llama2-7b")), 6'738'415'616);
  EXPECT_EQ(total_params(test::catalog_model("llama2-70b")), 68'976'648'192);
  EXPECT_EQ(total_params(test::catalog_model("llama3.1-70b")), 70'553'706'496);
  EXPECT_EQ(total_params(test::catalog_model("llama3.1-405b")), 405'853'388'800);
  EXPECT_EQ(total_params(test::catalog_model("mixtral-8x7b")), 46'702'792'704);
  // GPT-3 175B: 96 x (12 h^2 + 13 h) + (50257 + 2048) h + 2 h with h = 12288.
  EXPECT_EQ(total_params(test::catalog_model("gpt3-175b")), 174'604'259'328);
}

// The mixture-of-experts catalog, each count summed by hand from its architecture.
TEST(ModelCatalog, ExactMoeCounts) {
  // Mixtral 8x22B: 56 x (attention 6144 x 8192 + 6144^2, 8 experts of 3 x 6144 x 16384, the
  // router, 2 norms) + 2 x 32768 x 6144 + the final norm.
  EXPECT_EQ(total_params(test::catalog_model("mixtral-8x22b")), 140'630'071'296);
  // DeepSeek-V3, MLA per layer: q_a 7168 x 1536 + 1536 + q_b 1536 x 128 x 192 + kv_a 7168 x 576
  // + 512 + kv_b 512 x 128 x 256 + o 16384 x 7168 = 187,107,328; 3 dense layers of 3 x 7168 x
  // 18432, 58 MoE layers of 257 MLPs of 3 x 7168 x 2048 and a router of 256 x 7168 (its expert
  // bias is a buffer, not a parameter: Megatron-Core's optimizer never sees it).
  const Model ds = test::catalog_model("deepseek-v3");
  EXPECT_EQ(count_params(ds).layer_attention, 187'107'328);
  EXPECT_EQ(moe_layer_count(ds), 58);
  EXPECT_EQ(total_params(ds), 671'026'404'352);
  EXPECT_EQ(active_params(ds), 36'625'603'584);  // README_WEIGHTS: 36.6B with the output head
  // Grok-1: tied embedding, four norms per layer.
  EXPECT_EQ(total_params(test::catalog_model("grok-1")), 315'684'820'992);
  // Llama 4 Maverick (text): MoE layers 1, 3, ..., 47 with a shared expert, dense ones between.
  const Model l4 = test::catalog_model("llama4-maverick");
  EXPECT_EQ(moe_layer_count(l4), 24);
  EXPECT_FALSE(is_moe_layer(l4, 0));
  EXPECT_TRUE(is_moe_layer(l4, 1));
  EXPECT_EQ(total_params(l4), 400'711'848'960);
  // Qwen3: a q and a k norm of head_dim per layer.
  EXPECT_EQ(total_params(test::catalog_model("qwen3-30b-a3b")), 30'532'122'624);
  EXPECT_EQ(total_params(test::catalog_model("qwen3-235b-a22b")), 235'093'634'560);
  // GPT-OSS 120B reproduces its model card's Table 1 exactly: attention 0.96B with biases and
  // 64 sinks per layer, MLP 114.71B with expert and router biases, 116.83B in all, 5.13B active.
  const Model oss = test::catalog_model("gpt-oss-120b");
  EXPECT_EQ(36 * count_params(oss).layer_attention, 955'805'184);
  EXPECT_EQ(36 * count_params(oss).layer_mlp, 114'714'874'368);
  EXPECT_EQ(total_params(oss), 116'829'156'672);
  EXPECT_EQ(active_params(oss), 5'132'849'472);
  // Qwen1.5-MoE-A2.7B, per layer: attention 4 x 2048^2 + 3 x 2048 (Q/K/V biases), 60 experts of
  // 3 x 2048 x 1408, the shared expert 3 x 2048 x 5632 and its gate of 2048, the router 60 x
  // 2048, 2 norms: 570,560,512; 24 of them, the embedding and the LM head of 151936 x 2048 and
  // the final norm. Active: 4 experts, and the LM head; the model card's 2.7B adds the input
  // embedding (2,689,173,504).
  const Model q15 = test::catalog_model("qwen1.5-moe-a2.7b");
  EXPECT_EQ(count_params(q15).layer(true), 570'560'512);
  EXPECT_EQ(total_params(q15), 14'315'784'192);
  EXPECT_EQ(active_params(q15), 2'378'008'576);
  // Qwen2-57B-A14B: attention 2 x 3584^2 + 2 x 512 x 3584 + 4608 biases, 64 experts of 3 x 3584
  // x 2560, the shared expert 3 x 3584 x 20480 and its gate, the router, 2 norms.
  const Model q2 = test::catalog_model("qwen2-57b-a14b");
  EXPECT_EQ(count_params(q2).layer(true), 2'011'413'504);
  EXPECT_EQ(total_params(q2), 57'408'658'944);
  // DeepSeek-V2-Lite, MLA without the query bottleneck: q 2048 x 16 x 192 + kv_a 2048 x 576 +
  // 512 + kv_b 512 x 16 x 256 + o 2048^2 = 13,763,072; one dense layer of 3 x 2048 x 10944, 26
  // MoE layers of 64 experts of 3 x 2048 x 1408, the two shared ones as one MLP of 2816 and a
  // router of 64 x 2048; 2 norms a layer. Active: 6 experts, the LM head, not the embedding.
  const Model lite = test::catalog_model("deepseek-v2-lite");
  EXPECT_EQ(count_params(lite).layer_attention, 13'763'072);
  EXPECT_EQ(count_params(lite).layer(false), 81'007'104);
  EXPECT_EQ(count_params(lite).layer(true), 584'847'872);
  EXPECT_EQ(total_params(lite), 15'706'484'224);
  EXPECT_EQ(active_params(lite), 2'451'435'008);
  // DeepSeek-V2: q_a 5120 x 1536 + 1536 + q_b 1536 x 128 x 192 + kv_a 5120 x 576 + 512 + kv_b
  // 512 x 128 x 256 + o 16384 x 5120 = 149,227,520; 59 MoE layers of 160 experts of 3 x 5120 x
  // 1536, a shared MLP of 3072 and a router of 160 x 5120.
  const Model v2 = test::catalog_model("deepseek-v2");
  EXPECT_EQ(count_params(v2).layer_attention, 149'227'520);
  EXPECT_EQ(count_params(v2).layer(true), 3'972'116'480);
  EXPECT_EQ(total_params(v2), 235'741'434'880);
  EXPECT_EQ(active_params(v2), 20'851'512'320);
}

TEST(HuggingFace, ConfigsReadAsIs) {
  struct Case {
    const char* dir;
    std::int64_t params;
  };
  // Counts of the public checkpoints: Llama 3.1 8B, Mixtral 8x7B, Qwen2 0.5B (tied, QKV bias),
  // GPT-2 (tied, learned positions, all biases), Pythia 160M (GPT-NeoX), Mistral 7B.
  for (const auto& c : {Case{"llama3.1-8b", 8'030'261'248}, Case{"mixtral-8x7b", 46'702'792'704},
                        Case{"qwen2-0.5b", 494'032'768}, Case{"gpt2", 124'439'808},
                        Case{"pythia-160m", 162'322'944}, Case{"mistral-7b", 7'241'732'096}}) {
    const Model m = load_model(test::data_path(std::string("hf/") + c.dir + "/config.json"));
    EXPECT_EQ(total_params(m), c.params) << c.dir;
    EXPECT_EQ(m.name, c.dir);
  }
}

// The mixture-of-experts architectures' config.json files give the catalog's counts (each
// reader maps its keys: DeepSeek's MLA and shared experts, Qwen3's q/k norms and sparse step,
// Llama 4's text_config with interleaved dense layers, GPT-OSS's biases and sinks, Grok-1's
// tied embedding and sandwich norms, Qwen2-MoE's gated shared expert).
TEST(HuggingFace, MoeConfigsGiveTheCatalogsCounts) {
  for (const char* name : {"mixtral-8x22b", "deepseek-v3", "grok-1", "llama4-maverick",
                           "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b", "qwen1.5-moe-a2.7b",
                           "qwen2-57b-a14b", "deepseek-v2-lite", "deepseek-v2"}) {
    const Model hf = load_model(test::data_path(std::string("hf/") + name + "/config.json"));
    const Model cat = test::catalog_model(name);
    EXPECT_EQ(total_params(hf), total_params(cat)) << name;
    EXPECT_EQ(active_params(hf), active_params(cat)) << name;
    EXPECT_EQ(moe_layer_count(hf), moe_layer_count(cat)) << name;
    EXPECT_EQ(model_flops_per_sample(hf, 4096), model_flops_per_sample(cat, 4096)) << name;
  }
}

TEST(HuggingFace, SameShapesAsTheCatalog) {
  const Model hf = load_model(test::data_path("hf/llama3.1-8b/config.json"));
  const Model ours = test::catalog_model("llama3.1-8b");
  EXPECT_EQ(hf.hidden_size, ours.hidden_size);
  EXPECT_EQ(hf.num_kv_heads, ours.num_kv_heads);
  EXPECT_EQ(hf.head_dim, ours.head_dim);
  EXPECT_EQ(hf.ffn_kind, ours.ffn_kind);
  EXPECT_DOUBLE_EQ(model_flops_per_sample(hf, 8192), model_flops_per_sample(ours, 8192));
}

TEST(HuggingFace, UnsupportedArchitectureIsAnInputError) {
  auto j = nlohmann::json::parse(R"({"architectures": ["BertModel"], "hidden_size": 768})");
  try {
    parse_hf_config(j, "cfg.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "cfg.json: $.architectures: unsupported architecture \"BertModel\""),
              std::string::npos)
        << e.what();
  }
  auto missing =
      nlohmann::json::parse(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})");
  EXPECT_THROW(parse_hf_config(missing, "cfg.json"), InputError);
}

// A rule the model read from a config breaks is named by the config's key, not by the key of
// trainsim's own model files (it said $.num_kv_heads of a file that has num_key_value_heads).
TEST(HuggingFace, BrokenRulesNameTheConfigsKeys) {
  const auto refused = [](const char* config, const char* key, int value) -> std::string {
    auto j = nlohmann::json::parse(test::read_file(test::data_path(config)));
    j[key] = value;
    try {
      parse_hf_config(j, "cfg.json");
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(refused("hf/llama3.1-8b/config.json", "num_key_value_heads", 5),
            "cfg.json: $.num_key_value_heads: must divide num_attention_heads (32), got 5");
  EXPECT_EQ(refused("hf/mixtral-8x22b/config.json", "num_experts_per_tok", 9),
            "cfg.json: $.num_experts_per_tok: must not exceed moe.num_experts (8)");
}

// Model FLOPs per sample as NVIDIA's DGX Cloud benchmarking READMEs state them (model_flops_note
// in tests/validation/refdata/nvidia_dgxc_benchmarking_h100.json), to three significant digits.
TEST(ModelFlops, MatchesPublishedPerSampleCounts) {
  struct Case {
    const char* model;
    std::int64_t seq;
    double published;
  };
  for (const auto& c : {Case{"llama3.1-8b", 8192, 4.74e14}, Case{"llama3.1-70b", 8192, 3.94e15},
                        Case{"llama2-70b", 4096, 1.82e15}, Case{"nemotron4-15b", 4096, 3.85e14},
                        Case{"gpt3-175b", 2048, 2.20e15}}) {
    const double f = model_flops_per_sample(test::catalog_model(c.model), c.seq);
    EXPECT_NEAR(f, c.published, 0.005 * c.published) << c.model;
  }
}

// The Nemotron-4 counts the same READMEs state (340B: 1.01e16 per 4k sample; 15B: 434.5e12 in
// v24.11.1) are the count of the same models without grouped-query attention (K and V projected
// for every head): what the README's "compute bound" line says of them.
TEST(ModelFlops, NemotronPublishedCountsIgnoreGroupedQueryAttention) {
  for (const auto& [name, published] :
       {std::pair<const char*, double>{"nemotron4-340b", 1.01e16}, {"nemotron4-15b", 4.345e14}}) {
    Model m = test::catalog_model(name);
    EXPECT_LT(m.num_kv_heads, m.num_attention_heads) << name;
    m.num_kv_heads = m.num_attention_heads;
    const double f = model_flops_per_sample(m, 4096);
    EXPECT_NEAR(f, published, 0.005 * published) << name;
  }
}

// The MoE recipes' model FLOPs as the same READMEs state them: NeMo's formulas for Grok-1 and
// Llama 4 Maverick count the causal half of the attention scores (with the full s^2 count the
// two would be 3.8 % and 11 % higher); top-k experts, Llama 4's shared expert and its dense
// layers between the MoE ones.
TEST(ModelFlops, MatchesPublishedMoeCounts) {
  const double grok = model_flops_per_sample(test::catalog_model("grok-1"), 8192, true);
  EXPECT_NEAR(grok, 4.27e15, 0.005 * 4.27e15);
  const Model l4 = test::catalog_model("llama4-maverick");
  EXPECT_NEAR(model_flops_per_sample(l4, 8192, true), 8.92e14, 0.005 * 8.92e14);
  EXPECT_NEAR(model_flops_per_sample(l4, 8192) / model_flops_per_sample(l4, 8192, true), 1.111,
              0.001);
}

// MLA and shared experts written out for DeepSeek-V3 at 4096 tokens: per token and layer,
// forward, 2 FLOPs per attention weight (q_a, q_b, kv_a, kv_b, o: 187,105,280 without the two
// latent norms), QK^T over 192 and AV over 128 per head; 3 dense layers of 3 x 7168 x 18432
// and 58 MoE layers of 8 routed and 1 shared expert of 3 x 7168 x 2048; its multi-token-
// prediction module as Megatron-LM counts it: one more MoE layer, its 2h x h projection and three
// norms, and the logits a second time.
TEST(ModelFlops, DeepSeekV3WrittenOut) {
  const double s = 4096, h = 7168;
  const double attention = 2.0 * 187'105'280 + 2.0 * s * 128 * (192 + 128);
  const double dense = attention + 2.0 * 3 * h * 18432;
  const double moe = attention + 2.0 * 3 * h * (8 + 1) * 2048;
  const double logits = 2.0 * h * 129280;
  const double main = 3.0 * s * (3 * dense + 58 * moe + logits);
  const double mtp = 3.0 * s * (moe + 2.0 * (2 * h * h + 3 * h) + logits);
  Model ds = test::catalog_model("deepseek-v3");
  ASSERT_EQ(ds.mtp_layers, 1);
  EXPECT_NEAR(model_flops_per_sample(ds, 4096), main + mtp, 1e-12 * (main + mtp));
  ds.mtp_layers = 0;
  EXPECT_NEAR(model_flops_per_sample(ds, 4096), main, 1e-12 * main);
}

// DeepSeek-V3's multi-token-prediction module: an MoE layer like layer 60, eh_proj of 2 x 7168 x
// 7168 and three RMSNorms. Hugging Face's checkpoint stores it with its own copies of the
// embedding and the output head: with them the 685B (to the nearest billion) of the model card;
// ours is 684.49B, the card's figure also counts the FP8 checkpoint's scaling factors (one per
// 128 x 128 block, about 0.04B).
TEST(ModelParams, DeepSeekV3MultiTokenPrediction) {
  const Model ds = test::catalog_model("deepseek-v3");
  const std::int64_t h = 7168;
  EXPECT_TRUE(mtp_layer_is_moe(ds));
  EXPECT_EQ(mtp_module_params(ds), layer_params(ds, 60) + 2 * h * h + 3 * h);
  EXPECT_EQ(mtp_module_params(ds), 11'610'067'968);
  const double checkpoint =
      static_cast<double>(total_params(ds) + mtp_module_params(ds) + 2 * 129280 * h);
  EXPECT_NEAR(checkpoint, 685e9, 0.001 * 685e9);
  EXPECT_EQ(total_params(ds), 671'026'404'352);  // the published 671B: the main model alone
}

// Megatron-LM's num_floating_point_operations, written out independently.
TEST(ModelFlops, EqualsMegatronFormula) {
  const Model m = test::catalog_model("llama3.1-70b");
  const double s = 4096, L = 80, h = 8192, a = 64, g = 8, f = 28672, V = 128256;
  const double megatron =
      12.0 * s * L * h * h * ((1.0 + g / a + s / h) + f / h * 1.5 + V / (2.0 * L * h));
  EXPECT_NEAR(model_flops_per_sample(m, 4096), megatron, 1e-9 * megatron);
}

// The Megatron-MoE-ModelZoo rows state Megatron-LM's throughput count of late 2025, which takes
// the causal half of the attention scores: the reference file's derived FLOPs per sample (from
// that formula) are trainsim's causal count for the catalog model, and its derived tokens/s per
// GPU follow from them.
TEST(ModelFlops, ModelZooRowsCountAsMegatronLmDid) {
  const auto ref = nlohmann::json::parse(test::read_file(
      test::source_dir() + "/tests/validation/refdata/megatron_moe_modelzoo_h100.json"));
  int rows = 0;
  for (const auto& row : ref.at("rows")) {
    SCOPED_TRACE(row.at("run").get<std::string>());
    const Model m = test::catalog_model(row.at("catalog_model").get<std::string>());
    const std::int64_t seq = row.at("seq_len");
    const double flops = row.at("derived_model_flops_per_sample");
    EXPECT_NEAR(model_flops_per_sample(m, seq, true), flops, 1e-12 * flops);
    const double tflops = row.at("model_tflops_per_gpu");
    const bool stepped = !row.at("step_time_s").is_null();
    // Samples per second and GPU: from the stated step where the row gives one, else its TFLOP/s.
    const double samples =
        stepped ? row.at("gbs").get<double>() /
                      (row.at("step_time_s").get<double>() * row.at("n_gpus").get<double>())
                : tflops * 1e12 / flops;
    EXPECT_NEAR(row.at("derived_tokens_per_s_per_gpu").get<double>(),
                samples * static_cast<double>(seq), 0.05);
    // Where both are stated, the TFLOP/s is that count over the step.
    if (stepped) {
      EXPECT_NEAR(samples * flops / 1e12, tflops, 0.005 * tflops);
    }
    ++rows;
  }
  EXPECT_EQ(rows, 5);
}

TEST(ModelJson, StrictSchema) {
  auto base = nlohmann::json::parse(R"({
    "name": "tiny", "hidden_size": 64, "num_layers": 2, "num_attention_heads": 4,
    "ffn_hidden_size": 256, "ffn_kind": "gelu", "vocab_size": 1000, "tied_embeddings": true,
    "position_embedding": "learned", "max_position_embeddings": 128, "norm": "layernorm",
    "bias": {"qkv": true, "attention_output": true, "mlp": true}})");
  const Model m = parse_model_json(base, "tiny.json");
  // 2 x (12 h^2 + 13 h) + (V + 128) h + 2 h
  EXPECT_EQ(total_params(m), 2 * (12 * 64 * 64 + 13 * 64) + (1000 + 128) * 64 + 2 * 64);

  auto expect_error = [&](nlohmann::json j, const std::string& expected) {
    try {
      parse_model_json(j, "tiny.json");
      ADD_FAILURE() << "no error, expected " << expected;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  };
  auto j = base;
  j["hidden_sise"] = 64;
  expect_error(
      j,
      "tiny.json: $.hidden_sise: unknown key; did you mean hidden_size? (known keys here: "
      "architecture, "
      "attention_sinks, bias, ffn_hidden_size, ffn_kind, head_dim, hidden_size, local_attention, "
      "max_position_embeddings, mla, "
      "moe, mtp_layers, name, norm, notes, num_attention_heads, num_kv_heads, num_layers, "
      "position_embedding, published_params, qk_norm, qk_norm_across_heads, sandwich_norms, "
      "source, "
      "tied_embeddings, vocab_size)");
  j = base;
  j["hidden_size"] = 0;
  expect_error(j, "tiny.json: $.hidden_size: must be an integer >= 1, got 0");
  j = base;
  j["num_kv_heads"] = 3;
  expect_error(j, "tiny.json: $.num_kv_heads: must divide num_attention_heads (4), got 3");
  j = base;
  j.erase("tied_embeddings");
  expect_error(j, "tiny.json: $.tied_embeddings: required key is missing");
  j = base;
  j["bias"]["gate"] = true;
  expect_error(j,
               "tiny.json: $.bias.gate: unknown key (known keys here: attention_output, mlp, qkv)");
  j = base;
  j["moe"] = {{"num_experts", 4}, {"experts_per_token", 2}, {"shared_expert_gate", true}};
  expect_error(j,
               "tiny.json: $.moe.shared_expert_gate: needs a shared expert to gate "
               "(moe.shared_expert_ffn_hidden_size above 0)");
}

}  // namespace
}  // namespace trainsim
