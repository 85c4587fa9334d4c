// The plan's schema reads a number the same way from a flag and from a scenario: the same values
// pass, the same are refused with the same words, and every default (which a report's plan
// writes) passes, so a report's plan can be given back as a scenario.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cli/plan_fields.hpp"
#include "sim/cli/plan_flags.hpp"
#include "sim/core/error.hpp"

namespace trainsim {
namespace {

// The error a flag's value gets, "" when it is taken.
std::string flag_error(const PlanField& field, const std::string& value) {
  Plan p;
  try {
    apply_flag(p, field, value);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The error a scenario's value gets, "" when it is taken.
std::string json_error(const PlanField& field, double value) {
  Plan p;
  const nlohmann::json plan = {{field.name, value}};
  JsonObject o(plan, "s.json", "$.plan");
  try {
    apply_json(p, field, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// What follows "must be" in an error, so that the flag's and the file's can be compared.
std::string rule_of(const std::string& error) {
  const auto at = error.find("must be");
  return at == std::string::npos ? error : error.substr(at);
}

TEST(PlanFields, RealsReadTheSameFromAFlagAndAScenario) {
  std::int64_t reals = 0;
  for (const auto& field : plan_fields()) {
    if (field.type != FieldType::kReal) continue;
    ++reals;
    const double def = Plan{}.*field.real;
    const auto& r = field.real_range;
    std::vector<double> values = {def, r.min, r.min + 0.5, r.min - 0.5, -1.0, 0.0, 1.0};
    if (r.max < 1e300) values.push_back(r.max);
    for (const double v : values) {
      const std::string text = nlohmann::json(v).dump();
      const std::string from_flag = flag_error(field, text);
      const std::string from_file = json_error(field, v);
      EXPECT_EQ(from_flag.empty(), from_file.empty())
          << field.name << " = " << text << ": flag '" << from_flag << "', file '" << from_file
          << "'";
      if (!from_flag.empty() && !from_file.empty()) {
        EXPECT_EQ(rule_of(from_flag), rule_of(from_file)) << field.name << " = " << text;
      }
    }
    EXPECT_EQ(flag_error(field, nlohmann::json(def).dump()), "") << field.name << " default";
  }
  // moe_imbalance, moe_capacity_factor, attention_dropout, hidden_dropout.
  EXPECT_EQ(reals, 4);
}

// The bounds as Megatron-LM states them: a probability below 1; an imbalance of at least 1 (the
// balanced default); a capacity factor of 0 (dropless, the default) or above.
TEST(PlanFields, RealBounds) {
  auto field = [](const std::string& name) -> const PlanField& {
    for (const auto& f : plan_fields()) {
      if (f.name == name) return f;
    }
    throw std::runtime_error("no field " + name);
  };
  EXPECT_EQ(flag_error(field("attention_dropout"), "1"),
            "--attention-dropout: must be a number >= 0 and < 1, got 1");
  EXPECT_EQ(flag_error(field("attention_dropout"), "0.1"), "");
  EXPECT_EQ(json_error(field("attention_dropout"), -0.1),
            "s.json: $.plan.attention_dropout: must be a number >= 0 and < 1, got -0.1");
  EXPECT_EQ(flag_error(field("moe_imbalance"), "0.9"),
            "--moe-imbalance: must be a number >= 1, got 0.9");
  EXPECT_EQ(json_error(field("moe_imbalance"), 1.0), "");
  EXPECT_EQ(json_error(field("moe_capacity_factor"), 0.0), "");
  EXPECT_EQ(flag_error(field("moe_capacity_factor"), "-1"),
            "--moe-capacity-factor: must be a number >= 0, got -1");
}

// A report's plan, read back as a scenario's plan, is the same plan: every field the table
// reports comes back, the options of another mode and the resolved defaults included (Megatron-
// LM's uneven-stage options were left out of reports before the table wrote them).
TEST(PlanFields, AReportsPlanReadsBackAsTheSamePlan) {
  Plan p;
  p.tp = 2;
  p.pp = 4;
  p.cp = 2;
  p.cp_comm = CpComm::kA2AP2P;
  p.cp_a2a_size = 2;
  p.ep = 4;
  p.moe_imbalance = 1.5;
  p.mtp_num_layers = 1;
  p.vp = 2;
  p.schedule = ScheduleKind::kInterleaved;
  p.seq_len = 8192;
  p.packed_document_tokens = 2048;
  p.decoder_first_pipeline_num_layers = 3;
  p.account_for_loss_in_pipeline_split = true;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kRecomputeCoreAttn | kRecomputeMlp;
  p.hidden_dropout = 0.1;
  p.lora_rank = 16;
  p.zero = 1;
  p.num_distributed_optimizer_instances = 2;
  p.optimizer_state = OptimizerState::kBf16Moments;
  p.defer_embedding_wgrad_compute = true;
  p.wgrad_deferral_limit = 4;
  p.overlap_p2p_comm = false;
  p.precision = Precision::kFP8;
  p.fp8_recipe = Fp8Recipe::kBlockwise;
  const nlohmann::ordered_json written = plan_json(p);
  const nlohmann::json as_read = written;
  JsonObject o(as_read, "report.json", "$.plan");
  Plan back;
  for (const auto& field : plan_fields()) {
    if (o.has(field.name)) apply_json(back, field, o);
  }
  o.finish();
  EXPECT_EQ(plan_json(back), written);
  EXPECT_EQ(back.decoder_first_pipeline_num_layers, 3);
  EXPECT_EQ(back.decoder_last_pipeline_num_layers, -1);
  EXPECT_TRUE(back.account_for_loss_in_pipeline_split);
  EXPECT_EQ(back.recompute_modules, p.recompute_modules);
  EXPECT_EQ(back.wgrad_deferral_limit, 4);
  EXPECT_EQ(back.overlap_p2p_comm, std::optional<bool>(false));
  EXPECT_EQ(written.at("etp"), 2);  // resolved: tp where unset
  EXPECT_EQ(written.at("vocab_divisible_by"), 128);
  // Left out where default or of another mode; gpus never (the report's top level gives it).
  for (const char* key : {"decoder_last_pipeline_num_layers", "attention_dropout", "gpus"}) {
    EXPECT_FALSE(written.contains(key)) << key;
  }
  EXPECT_FALSE(plan_json(Plan{}).contains("microbatch_group_size_per_vp_stage"));
  EXPECT_EQ(written.at("microbatch_group_size_per_vp_stage"), 4);  // pp, Megatron-LM's default
}

// Every field is a flag with its help, in the table's order, and every field but gpus is a
// column of a report's plan (and so of a sweep file).
TEST(PlanFields, EachFieldIsAFlagWithHelpAndAReportKey) {
  const auto options = plan_options().options();
  ASSERT_EQ(options.size(), plan_fields().size());
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const PlanField& f = plan_fields()[i];
    const std::string flag = flag_of(f.name).substr(2);
    EXPECT_EQ(options[i]->long_name(), f.negated ? "no-" + flag : flag);
    EXPECT_EQ(options[i]->description(), f.help);
    EXPECT_FALSE(f.help.empty()) << f.name;
    // A switch takes no value; every other flag names its value.
    EXPECT_EQ(options[i]->semantic()->max_tokens() == 0, f.type == FieldType::kBool) << f.name;
    EXPECT_EQ(f.value_name.empty(), f.type == FieldType::kBool) << f.name;
    if (f.name != "gpus") keys.push_back(f.name);
  }
  EXPECT_EQ(plan_json_keys(), keys);
  // The two switches that turn a default-on field off.
  std::vector<std::string> negated;
  for (const auto& f : plan_fields()) {
    if (f.negated) negated.push_back(f.name);
  }
  EXPECT_EQ(negated, (std::vector<std::string>{"moe_grouped_gemm", "overlap_p2p_comm"}));
}

// The text report's options line comes from the same table, in its order: each option set is
// said once, a default or an option of another mode not at all. Every field either describes
// itself or is one the plan's first line gives (its sizes, precision and schedule) or one its
// owner's words include (the recompute modules, the LoRA targets, the instances, the limit).
TEST(PlanFields, EachOptionDescribesItselfOnThePlansOptionsLine) {
  EXPECT_TRUE(plan_options_text(Plan{}).empty());
  Plan p;
  p.tp = 2;
  p.sp = true;
  p.ep = 4;
  p.moe_dispatcher = MoeDispatcher::kAllGather;
  p.moe_imbalance = 1.5;
  p.moe_grouped_gemm = false;
  p.pp = 4;
  p.decoder_last_pipeline_num_layers = 3;
  p.account_for_embedding_in_pipeline_split = true;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kRecomputeCoreAttn | kRecomputeMlp;
  p.attention_dropout = 0.1;
  p.lora_rank = 16;
  p.lora_target_modules = kLoraQkv;
  p.zero = 1;
  p.num_distributed_optimizer_instances = 2;
  p.grad_reduce_in_bf16 = true;
  p.optimizer_state = OptimizerState::kBf16;
  p.defer_embedding_wgrad_compute = true;
  p.overlap_grad_reduce = true;
  p.tp_comm_overlap = true;
  p.schedule = ScheduleKind::kInterleaved;
  p.vp = 2;
  p.overlap_p2p_comm = false;
  EXPECT_EQ(
      plan_options_text(p),
      (std::vector<std::string>{
          "all-gather token dispatch", "busiest expert 1.50x the mean load", "sequential experts",
          "last stage 3 layers", "embedding counted as a layer",
          "selective recompute (core_attn,mlp)", "attention dropout 0.10",
          "LoRA rank 16 on linear_qkv, base weights frozen",
          "distributed optimizer (zero 1, 2 instances)", "bf16 grad reduce", "bf16 optimizer state",
          "LM-head wgrad deferred to the flush", "overlap grad reduce", "tp comm overlap"}));
  // Selective recomputation of the attention core alone, Megatron-LM's default, and interleaving
  // with its sends on their own streams (the default there).
  p.recompute_modules = kRecomputeCoreAttn;
  p.overlap_p2p_comm.reset();
  const auto text = plan_options_text(p);
  EXPECT_EQ(std::count(text.begin(), text.end(), "selective recompute"), 1);
  EXPECT_EQ(text.back(), "overlap p2p comm");

  const std::vector<std::string> said_elsewhere = {"tp",
                                                   "pp",
                                                   "dp",
                                                   "cp",
                                                   "cp_comm_type",
                                                   "cp_a2a_size",
                                                   "ep",
                                                   "etp",
                                                   "mtp_num_layers",
                                                   "vp",
                                                   "sp",
                                                   "mbs",
                                                   "gbs",
                                                   "seq_len",
                                                   "packed_document_tokens",
                                                   "schedule",
                                                   "microbatch_group_size_per_vp_stage",
                                                   "rank_order",
                                                   "partition",
                                                   "framework",
                                                   "vocab_divisible_by",
                                                   "recompute_modules",
                                                   "recompute_num_layers",
                                                   "recompute_method",
                                                   "lora_target_modules",
                                                   "num_distributed_optimizer_instances",
                                                   "wgrad_deferral_limit",
                                                   "precision",
                                                   "fp8_recipe",
                                                   "gpus"};
  for (const auto& f : plan_fields()) {
    const bool elsewhere =
        std::find(said_elsewhere.begin(), said_elsewhere.end(), f.name) != said_elsewhere.end();
    EXPECT_NE(static_cast<bool>(f.describe), elsewhere) << f.name;
  }
}

// A sweep file's plan columns are the report's plan as text: read back through the schema they
// give the same plan, and its label lists the fields in the table's order, each only where it
// says something. A cell no field takes is an error naming where and the field.
TEST(PlanFields, APlansColumnsReadBackAsTextAndLabelIt) {
  Plan p;
  p.tp = 4;
  p.sp = true;
  p.pp = 2;
  p.vp = 5;
  p.schedule = ScheduleKind::kInterleaved;
  p.dp = 16;
  p.cp = 2;
  p.cp_comm = CpComm::kA2A;
  p.seq_len = 8192;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kRecomputeCoreAttn | kRecomputeMlp;
  p.zero = 1;
  p.num_distributed_optimizer_instances = 2;
  p.overlap_grad_reduce = true;
  p.tp_comm_overlap = true;
  p.precision = Precision::kFP8;
  p.fp8_recipe = Fp8Recipe::kTensorwise;
  std::map<std::string, std::string> cells;
  const nlohmann::ordered_json written = plan_json(p);
  for (const auto& [key, value] : written.items()) {
    cells[key] = value.is_string()    ? value.get<std::string>()
                 : value.is_boolean() ? (value.get<bool>() ? "true" : "false")
                                      : value.dump();
  }
  cells["decoder_last_pipeline_num_layers"] = "";  // blank: left at its default
  const Plan back = plan_from_text(cells, "sweep file, plan 7");
  EXPECT_EQ(plan_json(back), plan_json(p));
  EXPECT_EQ(plan_label(back),
            "tp 4 pp 2 dp 16 cp 2 a2a vp 5 sp mbs 1 interleaved recompute selective "
            "(core_attn,mlp) zero 1 x 2 instances grad-overlap tp-overlap fp8 tensorwise");
  EXPECT_EQ(plan_label(Plan{}), "tp 1 pp 1 dp 1 mbs 1 1f1b");
  cells["tp"] = "four";
  try {
    plan_from_text(cells, "sweep file, plan 7");
    ADD_FAILURE() << "a cell no field takes was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "sweep file, plan 7: tp: must be an integer, got 'four'");
  }
}

}  // namespace
}  // namespace trainsim
