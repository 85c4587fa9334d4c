// trainsim validate on step times (DGX Cloud recipes): a row's prediction is the simulated step
// of the plan the row describes with NeMo's defaults, each row falls in the half of the fixed
// split its id's SHA-256 gives, and rows trainsim cannot express say why.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/core/hash.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"
#include "sim/validate/parallel_rows.hpp"
#include "sim/validate/validate.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

nlohmann::json recipe_row(const std::string& model, const std::string& precision,
                          std::int64_t gpus) {
  return {{"model", model},
          {"task", "pretrain"},
          {"precision", precision},
          {"n_gpus", gpus},
          {"seq_len", 4096},
          {"tp", 4},
          {"pp", 1},
          {"cp", nullptr},
          {"vp", nullptr},
          {"ep", nullptr},
          {"mbs", 4},
          {"gbs", 4 * gpus},
          {"step_time_s", 2.83},
          {"flags", nlohmann::json::array()},
          {"source", {{"tag", "v24.11.1"}}}};
}

ValidationSet validate_rows(const nlohmann::json& rows) {
  const auto dir = test::make_temp_dir();
  const auto path = dir + "/nvidia_dgxc_benchmarking_test.json";
  test::write_file(path, nlohmann::json{{"rows", rows}}.dump());
  return validate_reference(path, test::catalog_platform("h100-sxm-ndr")).at(0);
}

TEST(ValidateStepTime, PredictionIsTheSimulatedStepOfTheRowsPlan) {
  const auto set = validate_rows(nlohmann::json::array({recipe_row("Nemotron4 15B", "BF16", 16)}));
  ASSERT_EQ(set.rows.size(), 1u);
  const auto& row = set.rows[0];
  ASSERT_FALSE(row.skipped) << *row.skipped;
  EXPECT_EQ(row.name, "Nemotron4 15B BF16 16 GPUs (v24.11.1)");
  Plan p;
  p.tp = 4;
  p.dp = 4;
  p.mbs = 4;
  p.gbs = 64;
  p.seq_len = 4096;
  p.sp = true;
  p.zero = 1;
  p.overlap_grad_reduce = p.overlap_param_gather = p.tp_comm_overlap = true;
  p.grad_reduce_in_bf16 = true;  // v24.11.1's configuration: optim.grad_sync_dtype bf16
  const Model m = test::catalog_model("nemotron4-15b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const double step = evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s;
  EXPECT_DOUBLE_EQ(row.predicted, step);
  EXPECT_DOUBLE_EQ(row.measured, 2.83);
  EXPECT_DOUBLE_EQ(row.error(), (step - 2.83) / 2.83);
  // Its worst stage's peak, with the assumed fragmentation and without.
  const Partition part = build_partition(m, pf, p);
  const MemoryModel mm = compute_memory(m, pf, p, part, compute_costs(m, pf, p, part));
  const StageMemory& worst = mm.stages[static_cast<std::size_t>(mm.worst_stage())];
  EXPECT_DOUBLE_EQ(row.peak_bytes, worst.peak_bytes);
  EXPECT_DOUBLE_EQ(row.peak_unfragmented_bytes, worst.peak_allocated + pf.memory.reserved);
  EXPECT_LT(row.peak_unfragmented_bytes, row.peak_bytes);
  EXPECT_DOUBLE_EQ(set.gpu_memory_bytes, 80.0 * (1 << 30));
}

// A DeepSeek-V3 row runs what its benchmark script sets (NeMo's pretrain_deepseek_v3.py at the
// pinned commit): 64 / pp - 1 layers first, 64 / pp - 2 last, selective recomputation of MLA's
// up-projections, TP communication not overlapped, capacity factor 1.
TEST(ValidateStepTime, DeepSeekRowsRunTheirBenchmarkScript) {
  auto j = recipe_row("DeepSeek-V3 671B (MoE)", "BF16", 512);
  j["tp"] = 2;
  j["pp"] = 8;
  j["vp"] = 1;
  j["ep"] = 64;
  j["etp"] = 1;
  j["mbs"] = 1;
  j["gbs"] = 4096;
  j["num_layers"] = 61;
  j["source"]["tag"] = "v25.05.05";
  const auto set = validate_rows(nlohmann::json::array({j}));
  ASSERT_EQ(set.rows.size(), 1u);
  const auto& row = set.rows[0];
  ASSERT_FALSE(row.skipped) << *row.skipped;
  EXPECT_EQ(
      row.setup,
      "deepseek-v3, tp 2 pp 8 ep 64 etp 1, 61 layers dp 32, mbs 1, gbs 4096, seq 4096, first "
      "stage 7 layers, last 6, recompute mla_up_proj, no TP overlap, capacity factor 1, bf16");
  Plan p;
  p.tp = 2;
  p.pp = 8;
  p.dp = 32;
  p.ep = 64;
  p.etp = 1;
  p.mbs = 1;
  p.gbs = 4096;
  p.seq_len = 4096;
  p.sp = true;
  p.zero = 1;
  p.overlap_grad_reduce = p.overlap_param_gather = true;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kRecomputeMlaUpProj;
  p.decoder_first_pipeline_num_layers = 7;
  p.decoder_last_pipeline_num_layers = 6;
  p.moe_capacity_factor = 1.0;
  Model m = test::catalog_model("deepseek-v3");
  m.num_layers = 61;
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const double step = evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s;
  EXPECT_DOUBLE_EQ(row.predicted, step);
  // The script's split puts 7 + 6 x 8 + 6 = 61 layers on the stages, not trainsim's balanced one.
  p.decoder_first_pipeline_num_layers = p.decoder_last_pipeline_num_layers = -1;
  p.partition = "balanced";
  EXPECT_NE(row.predicted, evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s);
}

// A v25.04.02 fine-tuning row (`task` finetune_SFT or finetune_LoRA) of `model` on `gpus` GPUs,
// micro-batch 1, and the one row validate makes of it.
ValidationRow finetune_row(const std::string& model, const std::string& precision,
                           std::int64_t gpus, const std::string& task, std::int64_t tp,
                           std::int64_t pp, std::int64_t vp, std::int64_t gbs) {
  auto j = recipe_row(model, precision, gpus);
  j["task"] = task;
  j["tp"] = tp;
  j["pp"] = pp;
  if (vp > 1) j["vp"] = vp;
  j["mbs"] = 1;
  j["gbs"] = gbs;
  j["source"]["tag"] = "v25.04.02";
  return validate_rows(nlohmann::json::array({j})).rows.at(0);
}

// What every fine-tuning row runs: SQuAD packed into 4,096-token sequences (documents of about
// 200 tokens as the attention sees them), one a micro-batch, sequence parallelism with TP, the
// interleaved schedule with VP, gradients reduced in BF16.
Plan packed_finetune_plan(std::int64_t tp, std::int64_t pp, std::int64_t vp, std::int64_t dp,
                          std::int64_t gbs) {
  Plan p;
  p.tp = tp;
  p.pp = pp;
  p.vp = vp;
  if (vp > 1) p.schedule = ScheduleKind::kInterleaved;
  p.dp = dp;
  p.mbs = 1;
  p.gbs = gbs;
  p.seq_len = 4096;
  p.packed_document_tokens = 200;
  p.sp = tp > 1;
  p.grad_reduce_in_bf16 = true;
  return p;
}

// A supervised fine-tuning row runs its benchmark's recipe (v25.04.02's ft_llama3, NeMo's
// finetune_recipe in performance mode): SQuAD packed into each sequence, documents of about 200
// tokens as the attention sees them, and for Llama 3 70B on a pipeline the LM head's weight
// gradients of 22 micro-batches deferred. It checks the calibration, which never saw it.
TEST(ValidateStepTime, SftRowsRunTheirFineTuningRecipe) {
  const auto row = finetune_row("Llama3 70B", "BF16", 32, "finetune_SFT", 4, 4, 5, 32);
  ASSERT_FALSE(row.skipped) << *row.skipped;
  EXPECT_EQ(row.name, "Llama3 70B BF16 32 GPUs (v25.04.02, finetune_SFT)");
  EXPECT_EQ(row.half, "check");
  EXPECT_EQ(row.setup,
            "llama3.1-70b, tp 4 pp 4 x vp 5 dp 2, mbs 1, gbs 32, seq 4096, SQuAD packed, "
            "documents of 200, defer-wgrad 22, bf16 grad reduce, bf16");
  Plan p = packed_finetune_plan(4, 4, 5, 2, 32);
  p.tp_comm_overlap = true;
  p.zero = 1;
  p.overlap_grad_reduce = p.overlap_param_gather = true;
  p.defer_embedding_wgrad_compute = true;
  p.wgrad_deferral_limit = 22;
  const Model m = test::catalog_model("llama3.1-70b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const double step = evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s;
  EXPECT_DOUBLE_EQ(row.predicted, step);
  // Unpacked, its attention over the whole 4,096 tokens would be priced longer.
  p.packed_document_tokens = 0;
  EXPECT_GT(evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s, step);
}

// A LoRA row runs its recipe: the same packed SQuAD, adapters of dim 8 (Llama 3 8B) on
// linear_qkv alone, Megatron's plain optimizer and NeMo's default DDP, which overlaps nothing.
TEST(ValidateStepTime, LoraRowsRunTheirFineTuningRecipe) {
  const auto row = finetune_row("Llama3 8B", "FP8", 16, "finetune_LoRA", 1, 1, 1, 64);
  ASSERT_FALSE(row.skipped) << *row.skipped;
  EXPECT_EQ(row.half, "check");
  EXPECT_EQ(row.setup,
            "llama3-8b, tp 1 pp 1 dp 16, mbs 1, gbs 64, seq 4096, SQuAD packed, documents of 200, "
            "LoRA rank 8 on linear_qkv, no distributed optimizer, no overlap, bf16 grad reduce, "
            "fp8");
  Plan p = packed_finetune_plan(1, 1, 1, 16, 64);
  p.precision = Precision::kFP8;
  p.lora_rank = 8;
  p.lora_target_modules = kLoraQkv;
  const Model m = test::catalog_model("llama3-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  EXPECT_DOUBLE_EQ(row.predicted, evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s);
}

// A LoRA row on an interleaved pipeline waits for its exchanges: the recipe adds no comm-overlap
// callback, the only place NeMo turns overlap_p2p_comm on, and Megatron-Core's ModelParallelConfig
// defaults it off. On 32 GPUs the stages sit on four nodes, their exchanges on InfiniBand, and
// waiting for them lengthens the step.
TEST(ValidateStepTime, LoraRowsOnAnInterleavedPipelineWaitForTheirExchanges) {
  const auto row = finetune_row("Llama3 70B", "BF16", 32, "finetune_LoRA", 2, 4, 20, 128);
  ASSERT_FALSE(row.skipped) << *row.skipped;
  Plan p = packed_finetune_plan(2, 4, 20, 4, 128);
  p.lora_rank = 16;
  p.lora_target_modules = kLoraQkv;
  p.overlap_p2p_comm = false;
  const Model m = test::catalog_model("llama3.1-70b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const double waiting = evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s;
  EXPECT_DOUBLE_EQ(row.predicted, waiting);
  p.overlap_p2p_comm = true;
  EXPECT_LT(evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s, 0.97 * waiting);
}

// The setup a small row of `model` (8 GPUs at TP 8, two layers) runs under release `tag`: what
// its benchmark configuration set, as validate reports it.
std::string small_row_setup(const std::string& model, const std::string& precision,
                            const std::string& tag, std::int64_t pp = 1) {
  auto j = recipe_row(model, precision, 8 * pp);
  j["tp"] = 8;
  j["pp"] = pp;
  if (pp > 1) j["vp"] = 1;  // a pipeline row names its virtual stages
  j["mbs"] = 1;
  j["gbs"] = 8;
  j["num_layers"] = 2;
  j["source"]["tag"] = tag;
  const auto set = validate_rows(nlohmann::json::array({j}));
  EXPECT_FALSE(set.rows.at(0).skipped);
  return set.rows.at(0).setup;
}

// The rows whose benchmark configuration exports NVTE_FUSED_ATTN=0 (NeMo's launcher configure.sh
// of Grok-1 in v24.11.1 and v25.04.02, of Nemotron-4 340B in v24.11.1) run FlashAttention-2;
// NeMo's performance scripts (v25.05.05) and the other launcher configurations run cuDNN's.
TEST(ValidateStepTime, RowsRunTheAttentionTheirConfigurationSets) {
  const std::string fa2 = "flash-attn2 attention";
  EXPECT_NE(small_row_setup("Nemotron4 340B", "BF16", "v24.11.1").find(fa2), std::string::npos);
  EXPECT_EQ(small_row_setup("Nemotron4 340B", "BF16", "v25.05.05").find(fa2), std::string::npos);
  EXPECT_EQ(small_row_setup("Nemotron4 15B", "BF16", "v24.11.1").find(fa2), std::string::npos);
}

// Sequential experts where the row's configuration turns the grouped GEMM off: NeMo's launcher
// YAML of Grok-1 in v24.11.1 and v25.04.02 sets moe_grouped_gemm false; NeMo 2's performance
// scripts (v25.05.05) keep the recipe's grouped GEMM.
TEST(ValidateStepTime, RowsRunTheExpertsTheirConfigurationSets) {
  const std::string sequential = "sequential experts";
  const std::string grok = "Grok-1 314B (MoE)";
  EXPECT_NE(small_row_setup(grok, "BF16", "v24.11.1").find(sequential), std::string::npos);
  EXPECT_NE(small_row_setup(grok, "BF16", "v25.04.02").find(sequential), std::string::npos);
  EXPECT_EQ(small_row_setup(grok, "BF16", "v25.05.05").find(sequential), std::string::npos);
}

// Gradients reduced in BF16 where the row's configuration says so: every NeMo launcher YAML of
// v24.11.1 (and Grok-1's of v25.04.02) sets optim.grad_sync_dtype bf16; NeMo 2's performance
// scripts set grad_reduce_in_fp32 False for FP8, and for BF16 the recipes they build in
// performance mode do (Nemotron-4, Llama 3, Llama 4, Grok-1's script); DeepSeek-V3's script
// builds its recipe without performance mode.
TEST(ValidateStepTime, RowsReduceGradientsInTheTypeTheirConfigurationSets) {
  const auto bf16_grads = [](const std::string& model, const std::string& precision,
                             const std::string& tag) {
    return small_row_setup(model, precision, tag).find("bf16 grad reduce") != std::string::npos;
  };
  EXPECT_TRUE(bf16_grads("Nemotron4 15B", "BF16", "v24.11.1"));
  EXPECT_TRUE(bf16_grads("Nemotron4 15B", "FP8", "v24.11.1"));
  EXPECT_TRUE(bf16_grads("Nemotron4 15B", "BF16", "v25.04.02"));
  EXPECT_TRUE(bf16_grads("Nemotron4 15B", "FP8", "v25.04.02"));
  EXPECT_TRUE(bf16_grads("Nemotron4 340B", "BF16", "v25.05.05"));
  EXPECT_TRUE(bf16_grads("Nemotron4 340B", "FP8", "v25.05.05"));
  EXPECT_TRUE(bf16_grads("Grok-1 314B (MoE)", "BF16", "v25.04.02"));
  EXPECT_TRUE(bf16_grads("Grok-1 314B (MoE)", "BF16", "v25.05.05"));
  EXPECT_FALSE(bf16_grads("DeepSeek-V3 671B (MoE)", "BF16", "v25.05.05"));
}

// The Nemotron-4 340B benchmarks defer the LM head's weight gradients of 22 micro-batches to the
// flush (v24.11.1's nemotron4-340b-synth.yaml, NeMo 2's recipe in performance mode), where there
// is a pipeline; v24.11.1's YAML also recomputes the core attention (selective granularity) and,
// alone of that release's YAMLs (Nemotron-4 15B's and the Llama 3.1 ones leave the optimizer's
// dtype fp32), keeps the optimizer's state in BF16 (distributed_fused_adam, dtype bf16).
TEST(ValidateStepTime, Nemotron4340BRowsRunTheirRecipesDeferralAndRecomputation) {
  const std::string defer = "defer-wgrad 22", selective = "selective recompute";
  const std::string optimizer = "bf16 optimizer state";
  const std::string v24 = small_row_setup("Nemotron4 340B", "BF16", "v24.11.1", 2);
  EXPECT_NE(v24.find(defer), std::string::npos) << v24;
  EXPECT_NE(v24.find(selective), std::string::npos) << v24;
  EXPECT_NE(v24.find(optimizer), std::string::npos) << v24;
  const std::string v25 = small_row_setup("Nemotron4 340B", "FP8", "v25.05.05", 2);
  EXPECT_NE(v25.find(defer), std::string::npos) << v25;
  EXPECT_EQ(v25.find(selective), std::string::npos) << v25;
  EXPECT_EQ(v25.find(optimizer), std::string::npos) << v25;
  EXPECT_EQ(small_row_setup("Nemotron4 15B", "BF16", "v24.11.1", 2).find(optimizer),
            std::string::npos);
  EXPECT_EQ(small_row_setup("Nemotron4 340B", "BF16", "v25.05.05").find(defer), std::string::npos);
  EXPECT_EQ(small_row_setup("Nemotron4 15B", "BF16", "v24.11.1", 2).find(defer), std::string::npos);
}

// v25.04.02's Nemotron-4 340B table leaves VP NA; its launch.sh passes -vp 12 to every 340B run.
// Those rows run interleaved with 12 virtual stages and check the calibration (never fitted on,
// like every row expressed after it was fitted); a row of another release without VP stays out.
TEST(ValidateStepTime, Nemotron4340BRowsWithoutVpRunTheirLaunchScriptsVp) {
  auto row = recipe_row("Nemotron4 340B", "BF16", 64);
  row["tp"] = 8;
  row["pp"] = 8;
  row["mbs"] = 1;
  row["gbs"] = 16;
  row["num_layers"] = 96;
  row["source"]["tag"] = "v25.04.02";
  auto older = row;
  older["source"]["tag"] = "v24.11.1";
  const auto set = validate_rows(nlohmann::json::array({row, older}));
  ASSERT_FALSE(set.rows.at(0).skipped);
  const std::string& setup = set.rows[0].setup;
  EXPECT_NE(setup.find("tp 8 pp 8 x vp 12, 96 layers"), std::string::npos) << setup;
  EXPECT_NE(setup.find("vp 12 from its launch script"), std::string::npos) << setup;
  EXPECT_EQ(set.rows[0].half, "check");
  ASSERT_TRUE(set.rows.at(1).skipped);
  EXPECT_EQ(*set.rows[1].skipped,
            "pipeline-parallel row without its virtual pipeline size (the table says NA)");
}

TEST(ValidateStepTime, TheSplitIsTheParityOfTheIdsHash) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::int64_t gpus : {16, 32, 64, 128, 256, 512}) {
    rows.push_back(recipe_row("Nemotron4 15B", "FP8", gpus));
  }
  const auto set = validate_rows(rows);
  std::int64_t fit = 0;
  for (const auto& r : set.rows) {
    const int first = std::stoi(sha256_hex(r.name).substr(0, 2), nullptr, 16);
    EXPECT_EQ(r.half, first % 2 == 0 ? "fit" : "check") << r.name;
    fit += r.half == "fit" ? 1 : 0;
  }
  const auto all = set.errors_of("", ""), f = set.errors_of("", "fit"),
             c = set.errors_of("", "check");
  EXPECT_EQ(all.rows, 6);
  EXPECT_EQ(f.rows, fit);
  EXPECT_EQ(c.rows, 6 - fit);
  EXPECT_GE(all.max, std::max(f.max, c.max));
}

TEST(ValidateStepTime, RowsItCannotExpressSayWhy) {
  auto moe = recipe_row("Grok-1 314B (MoE)", "BF16", 8);
  moe["ep"] = 2;
  moe["flags"] = nlohmann::json::array({"PROXY config: reduced number of layers"});
  auto jax = recipe_row("Llama2 70B (MaxText/JAX)", "BF16", 64);
  auto dpo = recipe_row("Llama3 8B", "BF16", 8);
  dpo["task"] = "finetune_DPO";  // no such row in the tables: a task trainsim does not model
  auto no_vp = recipe_row("Nemotron4 340B", "BF16", 256);
  no_vp["pp"] = 8;
  auto unknown = recipe_row("Falcon 180B", "BF16", 64);
  const auto set = validate_rows(nlohmann::json::array({moe, jax, dpo, no_vp, unknown}));
  const std::vector<std::string> want = {
      "proxy configuration with fewer layers, its layer count not given",
      "JAX framework (MaxText, PaxML): not a Megatron recipe",
      "fine-tuning other than SFT and LoRA",
      "pipeline-parallel row without its virtual pipeline size (the table says NA)",
      "model not in the catalog"};
  ASSERT_EQ(set.rows.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(set.rows[i].skipped) << i;
    EXPECT_EQ(*set.rows[i].skipped, want[i]);
  }
  EXPECT_EQ(set.expressed(), 0);
  EXPECT_EQ(set.rows[2].name, "Llama3 8B BF16 8 GPUs (v24.11.1, finetune_DPO)");
}

TEST(ValidateStepTime, AFieldOfTheWrongTypeNamesItsPath) {
  auto bad = recipe_row("Nemotron4 15B", "BF16", 16);
  bad["tp"] = "four";
  try {
    validate_rows(nlohmann::json::array({bad}));
    FAIL() << "accepted a string tp";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("$.rows[0].tp"), std::string::npos) << e.what();
  }
  auto bad_tag = recipe_row("Nemotron4 15B", "BF16", 16);
  bad_tag["source"]["tag"] = 24;
  try {
    validate_rows(nlohmann::json::array({bad_tag}));
    FAIL() << "accepted a numeric release tag";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("$.rows[0].source.tag"), std::string::npos) << e.what();
  }
}

// Rows priced on several threads come back in file order, and of several malformed rows the
// first one's error is the one reported, however the threads ran.
TEST(ValidateStepTime, ParallelRowsKeepFileOrderAndTheFirstError) {
  nlohmann::json rows = nlohmann::json::array();
  for (int i = 0; i < 64; ++i) rows.push_back({{"i", i}});
  auto name = [](const nlohmann::json& j, const std::string& path) {
    ValidationRow r;
    r.name = path + "=" + std::to_string(j.at("i").get<int>());
    return r;
  };
  const auto out = parallel_rows(rows, "f.json", name);
  ASSERT_EQ(out.size(), 64u);
  for (int i = 0; i < 64; ++i) {
    const std::string want = "$.rows[" + std::to_string(i) + "]=" + std::to_string(i);
    EXPECT_EQ(out[static_cast<std::size_t>(i)].name, want);
  }
  auto failing = [](const nlohmann::json& j, const std::string& path) {
    if (j.at("i").get<int>() % 10 == 7) fail_input("f.json: " + path, "bad");
    return ValidationRow{};
  };
  try {
    parallel_rows(rows, "f.json", failing);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("$.rows[7]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainsim
