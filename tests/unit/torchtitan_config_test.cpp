// A torchtitan config as the plan trainsim prices: each table's keys to plan fields (data
// parallelism from replicate x shard, FSDP as ZeRO, the batch from the local, micro and global
// batch), torchtitan's split of the layers over the pipeline stages, and what cannot be priced
// refused naming the key unless a flag prices it.
#include "sim/plan/torchtitan_config.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/core/error.hpp"
#include "sim/core/toml_subset.hpp"
#include "sim/model/model.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kConfig = test::source_dir() + "/scenarios/launch/torchtitan-llama3-70b.toml";
using Flags = std::map<std::string, std::string>;

using Edits = std::vector<std::pair<std::string, std::string>>;

// The example config with each edit's text replaced.
nlohmann::json config_with(const Edits& edits) {
  std::string text = test::read_file(kConfig);
  for (const auto& [from, to] : edits) text.replace(text.find(from), from.size(), to);
  return parse_toml_subset(text, "t.toml");
}

nlohmann::json config_with(const std::string& from, const std::string& to) {
  return from.empty() ? config_with(Edits{}) : config_with(Edits{{from, to}});
}

const Model& llama70b() {
  static const Model m = load_model(test::source_dir() + "/models/llama3.1-70b.json");
  return m;
}

TorchtitanPlan plan_of(const Edits& edits, const Flags& flags = {}) {
  return plan_from_torchtitan_config(config_with(edits), "t.toml", llama70b(), flags);
}

TorchtitanPlan plan_of(const std::string& from, const std::string& to, const Flags& flags = {}) {
  return plan_of(from.empty() ? Edits{} : Edits{{from, to}}, flags);
}

std::string plan_error(const Edits& edits, const Flags& flags = {}) {
  try {
    (void)plan_of(edits, flags);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read)";
}

std::string plan_error(const std::string& from, const std::string& to, const Flags& flags = {}) {
  return plan_error(Edits{{from, to}}, flags);
}

TEST(TorchtitanConfig, TablesSetThePlanFields) {
  const TorchtitanPlan p = plan_of("", "");
  const Flags expected = {{"dp", "8"},
                          {"tp", "8"},
                          {"sp", "true"},
                          {"pp", "1"},
                          {"cp", "1"},
                          {"seq_len", "8192"},
                          {"mbs", "4"},
                          {"gbs", "32"},  // local 4 x dp 8
                          {"recompute", "full"},
                          {"zero", "3"},
                          {"overlap_grad_reduce", "true"},
                          {"overlap_param_gather", "true"},
                          {"precision", "bf16"},
                          {"vocab_divisible_by", "1"}};
  EXPECT_EQ(p.fields, expected);
  EXPECT_EQ(p.origin.at("gbs"), "t.toml: $.training.local_batch_size");
  EXPECT_EQ(p.origin.at("zero"), "t.toml: $.parallelism.data_parallel_shard_degree");
  EXPECT_TRUE(p.defaults.empty());
  EXPECT_TRUE(p.notes.empty());
}

TEST(TorchtitanConfig, ShardMinusOneTakesWhatTheGpusLeave) {
  const std::string shard = "data_parallel_shard_degree = 8";
  const TorchtitanPlan p = plan_of(shard, "data_parallel_shard_degree = -1", {{"gpus", "128"}});
  EXPECT_EQ(p.fields.at("dp"), "16");
  EXPECT_EQ(p.fields.at("gbs"), "64");
  EXPECT_EQ(plan_of(shard, "", {{"dp", "4"}}).fields.at("dp"), "4");
  EXPECT_EQ(plan_error(shard, ""),
            "t.toml: $.parallelism.data_parallel_shard_degree: -1 (torchtitan's default) takes "
            "the ranks the world size leaves, which the config does not hold: add --gpus N "
            "(torchrun's --nproc-per-node x --nnodes)");
  EXPECT_EQ(plan_error(shard, "", {{"gpus", "100"}}),
            "--gpus: must be a multiple of replicate x tp x pp x cp = 8 (t.toml: "
            "$.parallelism.data_parallel_shard_degree is -1), got 100");
  EXPECT_EQ(plan_error(
                {{shard, "data_parallel_shard_degree = 65536"},
                 {"data_parallel_replicate_degree = 1", "data_parallel_replicate_degree = 65536"}}),
            "t.toml: $.parallelism.data_parallel_shard_degree: makes 4294967296 data-parallel "
            "ranks (replicate x shard), more than trainsim prices (16777216)");
  // DDP: replicate only, gradients all-reduced beside the backward.
  const TorchtitanPlan ddp =
      plan_of({{shard, "data_parallel_shard_degree = 1"},
               {"data_parallel_replicate_degree = 1", "data_parallel_replicate_degree = 2"}});
  EXPECT_EQ(ddp.fields.at("zero"), "0");
  EXPECT_EQ(ddp.fields.at("overlap_grad_reduce"), "true");
}

TEST(TorchtitanConfig, PipelineSplitIsTorchtitans) {
  const std::string pp = "pipeline_parallel_degree = 1";
  // 80 layers + embedding + output = 82 over 8 stages: 10 each, the first two 11; the first
  // stage's embedding and the last stage's output weigh a layer each.
  const TorchtitanPlan p = plan_of(pp, "pipeline_parallel_degree = 8");
  EXPECT_EQ(p.fields.at("schedule"), "1f1b");
  EXPECT_EQ(p.fields.at("partition"), "Et*10|t*11|t*10|t*10|t*10|t*10|t*10|t*9L");
  EXPECT_EQ(p.fields.at("mbs"), "1");   // the pipeline's micro-batch
  EXPECT_EQ(p.fields.at("zero"), "1");  // FSDP under pipelining
  EXPECT_EQ(p.origin.at("mbs"),
            "t.toml: $.parallelism.pipeline_parallel_microbatch_size (torchtitan's default)");
  const TorchtitanPlan looped =
      plan_of(pp,
              "pipeline_parallel_degree = 4\npipeline_parallel_schedule = \"interleaved1f1b\"\n"
              "pipeline_parallel_layers_per_stage = 7");
  // ceil(82 / 7) = 12 virtual stages, 3 per rank; 82 = 12 x 6 + 10: the first ten weigh 7.
  EXPECT_EQ(looped.fields.at("schedule"), "interleaved");
  EXPECT_EQ(looped.fields.at("vp"), "3");
  EXPECT_EQ(looped.fields.at("partition"), "Et*6|t*7|t*7|t*7|t*7|t*7|t*7|t*7|t*7|t*7|t*6|t*5L");
  // A pipeline the command line sets is not split by the config's.
  const TorchtitanPlan flagged = plan_of(pp, "pipeline_parallel_degree = 8", {{"pp", "4"}});
  EXPECT_FALSE(flagged.fields.contains("partition"));
  EXPECT_FALSE(flagged.fields.contains("schedule"));
  const TorchtitanPlan points =
      plan_of(pp, "pipeline_parallel_degree = 2\npipeline_parallel_split_points = [\"layers.30\"]");
  EXPECT_EQ(points.fields.at("partition"), "Et*30|t*50L");
  EXPECT_EQ(plan_error(pp,
                       "pipeline_parallel_degree = 2\n"
                       "pipeline_parallel_split_points = [\"layers.90\"]"),
            "t.toml: $.parallelism.pipeline_parallel_split_points: must name increasing layers "
            "'layers.N' with 0 < N < 80, got \"layers.90\"");
  EXPECT_EQ(plan_error(pp,
                       "pipeline_parallel_degree = 2\n"
                       "pipeline_parallel_schedule = \"ZBVZeroBubble\""),
            "t.toml: $.parallelism.pipeline_parallel_schedule: 'ZBVZeroBubble' is not modelled "
            "(1F1B, GPipe and Interleaved1F1B are): give --schedule to price the run as one of "
            "trainsim's");
  EXPECT_EQ(
      plan_error({{"local_batch_size = 4", "local_batch_size = 3"},
                  {pp, "pipeline_parallel_degree = 2\npipeline_parallel_microbatch_size = 2"}}),
      "t.toml: $.parallelism.pipeline_parallel_microbatch_size: must divide t.toml: "
      "$.training.local_batch_size (3), got 2");
}

TEST(TorchtitanConfig, CheckpointingTrainsimCannotPriceNeedsItsFlag) {
  const std::string full = "mode = \"full\"";
  EXPECT_EQ(plan_of(full, "mode = \"none\"").fields.at("recompute"), "none");
  EXPECT_EQ(plan_of(full, "mode = 'selective'\nselective_ac_option = '1'").fields.at("recompute"),
            "full");
  // Per operator: torchtitan's own policy (--recompute op).
  EXPECT_EQ(plan_of(full, "mode = 'selective'\nselective_ac_option = 'op'").fields.at("recompute"),
            "op");
  // Every other layer (torchtitan's default option): 40 of the 80, as the first 40.
  const TorchtitanPlan every_other = plan_of(full, "");
  EXPECT_EQ(every_other.fields.at("recompute"), "full");
  EXPECT_EQ(every_other.fields.at("recompute_num_layers"), "40");
  EXPECT_EQ(plan_of(full, "mode = 'selective'\nselective_ac_option = '200'").fields.at("recompute"),
            "none");
  // Over a pipeline each rank counts its own part's layers: 20 of each stage's 20 ...
  const std::string pp = "pipeline_parallel_degree = 1";
  const TorchtitanPlan staged = plan_of({{full, "mode = 'selective'\nselective_ac_option = '3'"},
                                         {pp,
                                          "pipeline_parallel_degree = 4\n"
                                          "pipeline_parallel_split_points = "
                                          "['layers.20', 'layers.40', 'layers.60']"}});
  EXPECT_EQ(staged.fields.at("recompute_num_layers"), "6");
  // ... and where the stages' counts differ (20, 21, 20, 19 layers: 6, 7, 6, 6), it is refused.
  EXPECT_EQ(plan_error({{full, "mode = 'selective'\nselective_ac_option = '3'"},
                        {pp, "pipeline_parallel_degree = 4"}}),
            "t.toml: $.activation_checkpoint.selective_ac_option: '3' (every N-th layer "
            "checkpointed) checkpoints different counts on different stages, which is not "
            "modelled: give --recompute to price the run as one of trainsim's");
  const TorchtitanPlan flagged = plan_of({{full, "mode = 'selective'\nselective_ac_option = '3'"},
                                          {pp, "pipeline_parallel_degree = 4"}},
                                         {{"recompute", "full"}});
  ASSERT_EQ(flagged.notes.size(), 1u);
  EXPECT_NE(flagged.notes[0].find("; --recompute full prices it"), std::string::npos);
  EXPECT_EQ(plan_error(full, "mode = 'selective'\nselective_ac_option = 'two'"),
            "t.toml: $.activation_checkpoint.selective_ac_option: must be 'op' or a positive "
            "integer (every N-th layer), got \"two\"");
}

// Gradient accumulation: torchtitan's train_step runs each micro-batch's backward with FSDP's
// gradient sync on (a reduce-scatter every micro-batch); under pipelining the schedule syncs at
// the last micro-batch only.
TEST(TorchtitanConfig, AccumulationReducesEveryMicroBatchWithoutPipelining) {
  const std::string global = "# global_batch_size = 128";
  const TorchtitanPlan four = plan_of(global, "global_batch_size = 128");
  EXPECT_EQ(four.fields.at("gbs"), "128");
  EXPECT_EQ(four.fields.at("grad_reduce_per_microbatch"), "true");
  EXPECT_EQ(four.origin.at("grad_reduce_per_microbatch"), "t.toml: $.training.global_batch_size");
  EXPECT_FALSE(plan_of(global, "global_batch_size = 32")
                   .fields.contains("grad_reduce_per_microbatch"));  // one micro-batch
  EXPECT_FALSE(plan_of({{global, "global_batch_size = 128"},
                        {"pipeline_parallel_degree = 1", "pipeline_parallel_degree = 2"}})
                   .fields.contains("grad_reduce_per_microbatch"));
}

TEST(TorchtitanConfig, Float8AndShardingAsTorchtitanRunsThem) {
  const TorchtitanPlan fp8 = plan_of(
      "converters = []", "converters = \"float8\"\n[float8]\nenable_fsdp_float8_all_gather = true");
  EXPECT_EQ(fp8.fields.at("precision"), "fp8");
  EXPECT_EQ(fp8.fields.at("fp8_recipe"), "tensorwise");
  EXPECT_EQ(fp8.fields.at("fp8_param_gather"), "true");
  EXPECT_EQ(plan_error("converters = []",
                       "converters = [\"float8\"]\n[float8]\nrecipe_name = "
                       "\"rowwise\""),
            "t.toml: $.float8.recipe_name: 'rowwise' (a scale per row) is not modelled "
            "(tensorwise is): give --fp8-recipe to price the run as one of trainsim's");
  // HSDP: the weights sharded over 8 ranks in each of 2 replicas, ZeRO 3 within an instance.
  const TorchtitanPlan hsdp =
      plan_of("data_parallel_replicate_degree = 1", "data_parallel_replicate_degree = 2");
  EXPECT_EQ(hsdp.fields.at("dp"), "16");
  EXPECT_EQ(hsdp.fields.at("zero"), "3");
  EXPECT_EQ(hsdp.fields.at("num_distributed_optimizer_instances"), "2");
  EXPECT_EQ(hsdp.origin.at("num_distributed_optimizer_instances"),
            "t.toml: $.parallelism.data_parallel_replicate_degree");
  // Under pipelining, ZeRO 1 in 2 instances (Megatron-LM's partial distributed optimizer).
  const TorchtitanPlan hsdp_pp =
      plan_of({{"data_parallel_replicate_degree = 1", "data_parallel_replicate_degree = 2"},
               {"pipeline_parallel_degree = 1", "pipeline_parallel_degree = 2"}});
  EXPECT_EQ(hsdp_pp.fields.at("zero"), "1");
  EXPECT_EQ(hsdp_pp.fields.at("num_distributed_optimizer_instances"), "2");
  // Replication alone (DDP) has no instances.
  const TorchtitanPlan ddp =
      plan_of({{"data_parallel_replicate_degree = 1", "data_parallel_replicate_degree = 8"},
               {"data_parallel_shard_degree = 8", "data_parallel_shard_degree = 1"}});
  EXPECT_EQ(ddp.fields.at("zero"), "0");
  EXPECT_FALSE(ddp.fields.contains("num_distributed_optimizer_instances"));
  // Async TP runs under torch.compile only.
  const std::string async_tp = "context_parallel_degree = 1\nenable_async_tensor_parallel = true";
  const TorchtitanPlan compiled =
      plan_of({{"compile = false", "compile = true"}, {"context_parallel_degree = 1", async_tp}});
  EXPECT_EQ(compiled.fields.at("tp_comm_overlap"), "true");
  EXPECT_EQ(compiled.notes,
            std::vector<std::string>{
                "t.toml: $.training.compile: torch.compile's fusions are not priced"});
  const TorchtitanPlan eager = plan_of({{"context_parallel_degree = 1", async_tp}});
  EXPECT_FALSE(eager.fields.contains("tp_comm_overlap"));
  EXPECT_EQ(eager.notes, std::vector<std::string>{
                             "t.toml: $.parallelism.enable_async_tensor_parallel: ignored, as "
                             "torchtitan does without torch.compile"});
  const TorchtitanPlan table_form =
      plan_of({{"compile = false", ""},
               {"[checkpoint]", "[compile]\nenable = true\n[checkpoint]"},
               {"context_parallel_degree = 1", async_tp}});
  EXPECT_EQ(table_form.fields.at("tp_comm_overlap"), "true");
  EXPECT_EQ(
      table_form.notes,
      std::vector<std::string>{"t.toml: $.compile.enable: torch.compile's fusions are not priced"});
  EXPECT_EQ(plan_error("name = \"AdamW\"", "name = \"Muon\""),
            "t.toml: $.optimizer.name: 'Muon' is not modelled (AdamW and Adam are)");
  const TorchtitanPlan unknown =
      plan_of("context_parallel_degree = 1", "context_parallel_degree = 1\nnew_knob = 3");
  ASSERT_EQ(unknown.notes.size(), 1u);
  EXPECT_EQ(unknown.notes[0], "t.toml: $.parallelism: not read: new_knob");
}

TEST(TorchtitanConfig, ModelAndFlavorNameACatalogModel) {
  EXPECT_EQ(torchtitan_catalog_model(config_with("", ""), "t.toml"), "llama3.1-70b");
  EXPECT_EQ(torchtitan_catalog_model(config_with("flavor = \"70B\"", "flavor = \"8B\""), "t.toml"),
            "llama3.1-8b");
  try {
    (void)torchtitan_catalog_model(config_with("flavor = \"70B\"", "flavor = \"debugmodel\""),
                                   "t.toml");
    FAIL() << "debugmodel read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "t.toml: $.model.flavor: torchtitan's llama3 debugmodel is not one trainsim's "
              "catalog holds (deepseek_v3 16B, deepseek_v3 236B, deepseek_v3 671B, llama2 70B, "
              "llama2 7B, llama3 405B, llama3 70B, "
              "llama3 8B, llama4 17bx128e, qwen3 235B-A22B, qwen3 30B-A3B): give the model with "
              "--model M (a catalog name or a config.json)");
  }
}

// The example config training another [model]: its name and flavor, and the catalog model.
struct Flavored {
  nlohmann::json config;
  Model model;
};
Flavored flavored(const std::string& name, const std::string& flavor, Edits edits = {}) {
  edits.emplace_back("name = \"llama3\"\nflavor = \"70B\"",
                     "name = \"" + name + "\"\nflavor = \"" + flavor + "\"");
  nlohmann::json config = config_with(edits);
  const std::string catalog = torchtitan_catalog_model(config, "t.toml");
  return {config, load_model(test::source_dir() + "/models/" + catalog + ".json")};
}

std::string flavored_error(const Flavored& f, const Flags& flags = {}) {
  try {
    (void)plan_from_torchtitan_config(f.config, "t.toml", f.model, flags);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read)";
}

// torchtitan's ParallelDims: the experts' mesh (efsdp, ep, etp) re-divides shard x cp x tp, etp
// 1 or tp; with ep 1 the experts are split over tp as trainsim's default etp does.
TEST(TorchtitanConfig, ExpertParallelismAsTorchtitanMeshesIt) {
  const std::string ep8 = "context_parallel_degree = 1\nexpert_parallel_degree = 8";
  const Flavored qwen = flavored("qwen3", "30B-A3B", {{"context_parallel_degree = 1", ep8}});
  EXPECT_EQ(qwen.model.name, "qwen3-30b-a3b");
  const TorchtitanPlan p = plan_from_torchtitan_config(qwen.config, "t.toml", qwen.model, {});
  EXPECT_EQ(p.fields.at("ep"), "8");
  EXPECT_EQ(p.fields.at("etp"), "1");  // torchtitan's default
  EXPECT_EQ(p.origin.at("etp"),
            "t.toml: $.parallelism.expert_tensor_parallel_degree (torchtitan's default)");
  // ep 1: the experts follow tp (no field set; trainsim's etp 0 is tp).
  const Flavored one = flavored("qwen3", "30B-A3B");
  EXPECT_FALSE(
      plan_from_torchtitan_config(one.config, "t.toml", one.model, {}).fields.contains("etp"));
  EXPECT_EQ(flavored_error(flavored(
                "qwen3", "30B-A3B",
                {{"context_parallel_degree = 1", ep8 + "\nexpert_tensor_parallel_degree = 2"}})),
            "t.toml: $.parallelism.expert_tensor_parallel_degree: must be 1 or "
            "tensor_parallel_degree (8) with expert parallelism, as torchtitan asks, got 2");
  // shard 8 x tp 8 = 64 ranks hold ep 16 x etp 8 = 128 only counting the 2 replicas, which
  // torchtitan's expert mesh leaves apart.
  EXPECT_EQ(flavored_error(flavored(
                "qwen3", "30B-A3B",
                {{"data_parallel_replicate_degree = 1", "data_parallel_replicate_degree = 2"},
                 {"context_parallel_degree = 1",
                  "context_parallel_degree = 1\nexpert_parallel_degree = "
                  "16\nexpert_tensor_parallel_degree = 8"}})),
            "t.toml: $.parallelism.expert_parallel_degree: x expert_tensor_parallel_degree (16 x "
            "8) must divide data_parallel_shard_degree x context_parallel_degree x "
            "tensor_parallel_degree = 64, torchtitan's expert mesh");
  // On a dense model torchtitan ignores them.
  const TorchtitanPlan dense = plan_of("context_parallel_degree = 1", ep8);
  EXPECT_FALSE(dense.fields.contains("ep"));
  EXPECT_EQ(dense.notes, std::vector<std::string>{"t.toml: $.parallelism.expert_parallel_degree: "
                                                  "no effect on llama3.1-70b, a dense model (as "
                                                  "in torchtitan)"});
  // FP8 on experts: torchao's linears and grouped GEMMs differ; a flag prices it.
  const Flavored fp8 =
      flavored("qwen3", "30B-A3B", {{"converters = []", "converters = [\"float8\"]"}});
  EXPECT_EQ(flavored_error(fp8),
            "t.toml: $.model.converters: FP8 on a mixture-of-experts model (float8 linear "
            "layers, the experts' grouped GEMMs in BF16 or in rowwise FP8) is not modelled: give "
            "--precision to price the run as one of trainsim's");
  EXPECT_EQ(flavored_error(fp8, {{"precision", "fp8"}}), "(read)");
}

// Where torchtitan's flavor is not the released model: DeepSeek-V3 671B without its MTP module
// and with FlexAttention's document mask; Llama 4 17bx128e attending globally on every layer,
// equal to the catalog's chunked attention only up to its 8192-token chunk.
TEST(TorchtitanConfig, FlavorsThatDifferFromTheCatalogModel) {
  const Flavored ds = flavored("deepseek_v3", "671B");
  EXPECT_GT(ds.model.mtp_layers, 0);
  const TorchtitanPlan p = plan_from_torchtitan_config(ds.config, "t.toml", ds.model, {});
  EXPECT_EQ(p.fields.at("mtp_num_layers"), "0");
  EXPECT_EQ(p.origin.at("mtp_num_layers"), "t.toml: $.model.flavor");
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_TRUE(p.notes[0].starts_with("t.toml: $.model.flavor: FlexAttention's block-causal"))
      << p.notes[0];
  const Flavored llama4 = flavored("llama4", "17bx128e");
  EXPECT_EQ(llama4.model.name, "llama4-maverick");
  EXPECT_EQ(flavored_error(llama4), "(read)");  // seq_len 8192: one chunk
  EXPECT_EQ(flavored_error(flavored("llama4", "17bx128e", {{"seq_len = 8192", "seq_len = 16384"}})),
            "t.toml: $.model.flavor: torchtitan's llama4 17bx128e attends over the whole "
            "sequence on every layer, where llama4-maverick chunks it to 8192 tokens: the two "
            "agree up to seq_len 8192 (got 16384); give --model a config.json");
  // deepseek_v3 16B and 236B: DeepSeek-V2-Lite's and DeepSeek-V2's shapes, no MTP to drop.
  for (const auto& [flavor, model] :
       {std::pair{"16B", "deepseek-v2-lite"}, std::pair{"236B", "deepseek-v2"}}) {
    const Flavored v2 = flavored("deepseek_v3", flavor);
    EXPECT_EQ(v2.model.name, model);
    const TorchtitanPlan q = plan_from_torchtitan_config(v2.config, "t.toml", v2.model, {});
    EXPECT_FALSE(q.fields.contains("mtp_num_layers"));
    ASSERT_EQ(q.notes.size(), 1u);
    EXPECT_TRUE(q.notes[0].starts_with("t.toml: $.model.flavor: FlexAttention's block-causal"));
  }
}

}  // namespace
}  // namespace trainsim
