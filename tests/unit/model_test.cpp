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
    "llama2-7b",     "llama2-70b", "llama3-8b",     "llama3.1-8b",    "llama3.1-70b",
    "llama3.1-405b", "gpt3-175b",  "nemotron4-15b", "nemotron4-340b", "mixtral-8x7b"};

TEST(ModelCatalog, HasTheNamedModels) {
  ::setenv("TRAINSIM_DATA_DIR", test::source_dir().c_str(), 1);
  auto names = catalog_names("models");
  for (const auto& n : kCatalog) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    EXPECT_EQ(test::catalog_model(n).name, n);
  }
}

// Every published count recorded in the catalog, to its published precision.
TEST(ModelCatalog, ParameterCountsMatchPublishedOnes) {
  for (const auto& n : kCatalog) {
    const Model m = test::catalog_model(n);
    ASSERT_TRUE(m.published.any()) << n;
    const auto c = count_params(m);
    const auto total = c.total(m.num_layers);
    const auto embedding = c.embedding() + c.lm_head;
    const double half = static_cast<double>(m.published.rounded_to) / 2.0;
    if (m.published.total > 0) {
      EXPECT_LE(std::abs(static_cast<double>(total - m.published.total)), half)
          << n << " " << total;
    }
    if (m.published.embedding > 0) {
      EXPECT_LE(std::abs(static_cast<double>(embedding - m.published.embedding)), half) << n;
    }
    if (m.published.non_embedding > 0) {
      EXPECT_LE(std::abs(static_cast<double>(total - embedding - m.published.non_embedding)), half)
          << n;
    }
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

// Megatron-LM's num_floating_point_operations, written out independently.
TEST(ModelFlops, EqualsMegatronFormula) {
  const Model m = test::catalog_model("llama3.1-70b");
  const double s = 4096, L = 80, h = 8192, a = 64, g = 8, f = 28672, V = 128256;
  const double megatron =
      12.0 * s * L * h * h * ((1.0 + g / a + s / h) + f / h * 1.5 + V / (2.0 * L * h));
  EXPECT_NEAR(model_flops_per_sample(m, 4096), megatron, 1e-9 * megatron);
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
  expect_error(j,
               "tiny.json: $.hidden_sise: unknown key (known keys here: bias, ffn_hidden_size, "
               "ffn_kind, head_dim, hidden_size, max_position_embeddings, moe, name, norm, "
               "notes, num_attention_heads, num_kv_heads, num_layers, position_embedding, "
               "published_params, source, tied_embeddings, vocab_size)");
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
}

}  // namespace
}  // namespace trainsim
