// Findings on what a plan asks that the model or the simulation does not carry out: config keys
// that are not simulated, flags that do nothing for this model or plan, a sequence past the
// positions the model was trained on.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/check/diagnostic.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan_schema.hpp"
#include "tests/support/support.hpp"
#include "tests/unit/check_support.hpp"

namespace trainsim {
namespace {

// A model checked with the plan flags at seq_len `within` has no finding `id`; at seq_len `past`
// it has one, returned (an empty one where it has not, the failure said).
Diagnostic only_past(const std::string& config, std::map<std::string, std::string> flags,
                     const std::string& id, const std::string& within, const std::string& past) {
  flags["seq_len"] = within;
  EXPECT_TRUE(check_model(config, flags).with_id(id).empty()) << id << " at seq_len " << within;
  flags["seq_len"] = past;
  const auto checked = check_model(config, flags);  // with_id points into it
  const auto found = checked.with_id(id);
  EXPECT_EQ(found.size(), 1u) << id << " at seq_len " << past;
  return found.empty() ? Diagnostic{} : *found[0];
}

// A Hugging Face config's keys that change the cost but are not simulated, each a warning naming
// its file and key; a sliding window only once the sequence is longer than the window. DeepSeek's
// num_nextn_predict_layers is read (multi-token prediction), not warned of.
TEST(Diagnostics, UnmodelledConfigKeysAreWarnedOf) {
  const std::string v3 = test::data_path("hf/deepseek-v3/config.json");
  const auto c =
      check_model(v3, {{"seq_len", "4096"}, {"tp", "8"}, {"sp", "true"}, {"pp", "1"}, {"dp", "1"}});
  // Its multi-token-prediction module is modelled now: nothing left to warn of.
  EXPECT_EQ(c.in.model.mtp_layers, 1);
  EXPECT_TRUE(c.with_id("unmodelled-config-key").empty());
  // Qwen2 with its window switched on: silent within the window, a warning past it.
  nlohmann::json qwen =
      nlohmann::json::parse(test::read_file(test::data_path("hf/qwen2-0.5b/config.json")));
  qwen["use_sliding_window"] = true;
  qwen["sliding_window"] = 4096;
  const std::string path = test::make_temp_dir() + "/config.json";
  test::write_file(path, qwen.dump());
  const std::map<std::string, std::string> plan = {{"tp", "1"}, {"pp", "1"}, {"dp", "1"}};
  EXPECT_EQ(only_past(path, plan, "unmodelled-config-key", "4096", "8192").message,
            path +
                ": $.sliding_window: a sliding window of 4096 tokens is not modelled for "
                "Qwen2ForCausalLM: attention is costed over the whole sequence");
  // The catalog's Qwen2 keeps the window off: nothing to say.
  auto flags = plan;
  flags["seq_len"] = "16384";
  EXPECT_TRUE(check_model(test::data_path("hf/qwen2-0.5b/config.json"), flags)
                  .with_id("unmodelled-config-key")
                  .empty());
}

// --tp-comm-overlap on a multi-latent-attention model under Megatron: a warning that the flag
// does not reach the layers; none where it does (a model without MLA, or the flag off).
TEST(Diagnostics, TpCommOverlapDroppedForMultiLatentAttention) {
  const std::map<std::string, std::string> flags = {
      {"seq_len", "4096"},         {"tp", "2"}, {"sp", "true"},
      {"tp_comm_overlap", "true"}, {"pp", "1"}, {"dp", "1"}};
  const auto checked = check_model("deepseek-v3", flags);
  const auto dropped = checked.with_id("tp-comm-overlap-dropped");
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0]->severity, Severity::kWarning);
  EXPECT_TRUE(contains(dropped[0]->message, "the first layer's q_down_proj"))
      << dropped[0]->message;
  EXPECT_EQ(dropped[0]->fix,
            "drop --tp-comm-overlap: the step is priced the same without it, and Megatron-Core "
            "runs it the same but for that one projection per pipeline rank");
  EXPECT_TRUE(check_model("nemotron4-15b", flags).with_id("tp-comm-overlap-dropped").empty());
  auto off = flags;
  off["tp_comm_overlap"] = "false";
  EXPECT_TRUE(check_model("deepseek-v3", off).with_id("tp-comm-overlap-dropped").empty());
}

// --cp-comm-type a2a at cp 1 is accepted (a sweep over cp keeps one kind) and said to do nothing;
// at cp 2 it splits the heads and nothing is said.
TEST(Diagnostics, CpCommTypeWithoutContextParallelism) {
  std::map<std::string, std::string> flags = {
      {"seq_len", "8192"}, {"cp_comm_type", "a2a"}, {"dp", "2"}, {"gbs", "8"}};
  const auto checked = check_model("llama3.1-8b", flags);  // with_id points into it
  const auto unused = checked.with_id("cp-comm-type-unused");
  ASSERT_EQ(unused.size(), 1u);
  EXPECT_EQ(unused[0]->severity, Severity::kInfo);
  EXPECT_EQ(unused[0]->message,
            "--cp-comm-type a2a has no effect: without context parallelism (cp 1) each GPU runs "
            "the attention over its whole sequence, and the step is priced as without it");
  EXPECT_EQ(unused[0]->fix, "drop --cp-comm-type, or give --cp 2 or more to split the sequence");
  flags["cp"] = "2";
  flags["dp"] = "1";
  EXPECT_TRUE(check_model("llama3.1-8b", flags).with_id("cp-comm-type-unused").empty());
  flags["cp_comm_type"] = "p2p";
  flags["cp"] = "1";
  EXPECT_TRUE(check_model("llama3.1-8b", flags).with_id("cp-comm-type-unused").empty());
}

// --sp at tp 1 runs as Megatron-LM runs it, without sequence parallelism (validate_args turns it
// off, with a warning): an info, the plan's label without "sp", and the step and every stage's
// peak those of the plan without it, an MoE model's (whose layers read the flag for their
// dispatch) included.
TEST(Diagnostics, SequenceParallelismWithoutTensorParallelism) {
  for (const std::string model : {"llama3.1-8b", "qwen3-30b-a3b"}) {
    std::map<std::string, std::string> flags = {
        {"seq_len", "4096"}, {"dp", "8"}, {"gbs", "16"}, {"zero", "1"}, {"sp", "true"}};
    const auto with = check_model(model, flags);  // with_id points into it
    const auto unused = with.with_id("sp-unused");
    ASSERT_EQ(unused.size(), 1u) << model;
    EXPECT_EQ(unused[0]->severity, Severity::kInfo);
    EXPECT_EQ(unused[0]->message,
              "--sp has no effect: Megatron-LM turns sequence parallelism off at tp 1, and the "
              "step is priced as without it");
    EXPECT_EQ(unused[0]->fix,
              "drop --sp, or give --tp 2 or more to split the sequence over a TP group");
    // A sweep's plan label does not claim it either.
    EXPECT_EQ(plan_label(with.in.plan).find(" sp "), std::string::npos) << plan_label(with.in.plan);
    flags["sp"] = "false";
    const auto without = check_model(model, flags);
    EXPECT_EQ(plan_label(with.in.plan), plan_label(without.in.plan));
    EXPECT_TRUE(without.with_id("sp-unused").empty());
    const Evaluation a = evaluate(with.in.model, with.in.platform, with.in.plan, with.partition,
                                  EngineKind::kAnalytic);
    const Evaluation b = evaluate(without.in.model, without.in.platform, without.in.plan,
                                  without.partition, EngineKind::kAnalytic);
    EXPECT_EQ(a.sim.step_time_s, b.sim.step_time_s) << model;
    const MemoryModel ma =
        compute_memory(with.in.model, with.in.platform, with.in.plan, with.partition, a.costs);
    const MemoryModel mb = compute_memory(without.in.model, without.in.platform, without.in.plan,
                                          without.partition, b.costs);
    ASSERT_EQ(ma.stages.size(), mb.stages.size());
    for (std::size_t s = 0; s < ma.stages.size(); ++s) {
      EXPECT_EQ(ma.stages[s].peak_bytes, mb.stages[s].peak_bytes) << model;
    }
  }
}

// RoPE past max_position_embeddings runs, with a warning and the way to train that long.
TEST(Diagnostics, SequencePastTheTrainedPositions) {
  const Diagnostic past = only_past(test::data_path("hf/mistral-7b/config.json"),
                                    {{"tp", "8"}, {"pp", "1"}, {"dp", "1"}},
                                    "sequence-past-trained-positions", "32768", "65536");
  EXPECT_EQ(past.message,
            "the sequence (65,536 tokens) is longer than the 32,768 positions the model was "
            "trained on (max_position_embeddings): the step is simulated as asked, but RoPE does "
            "not extrapolate that far unaided");
  EXPECT_EQ(past.fix,
            "train at seq_len 32768 or less, or extend the context first (rope_scaling, as "
            "long-context recipes do) and raise max_position_embeddings");
}

// Each plan field that can change nothing in a plan (the schema's `unused`, which a sweep reads
// to price such a plan once) has a check saying so where its value is not the default: the info
// <field>-unused, from the same row, with the row's advice on what makes the field act.
TEST(Diagnostics, EveryUnusedFieldHasItsInfo) {
  const auto c = check_model(
      "llama3.1-8b", {{"seq_len", "4096"}, {"dp", "8"}, {"sp", "true"}, {"cp_comm_type", "a2a"}});
  int unused = 0;
  for (const PlanField& f : plan_fields()) {
    if (unused_reason(f, c.in.plan).empty()) continue;
    ++unused;
    std::string id = f.name + "-unused";
    std::replace(id.begin(), id.end(), '_', '-');
    const auto found = c.with_id(id);
    ASSERT_EQ(found.size(), 1u) << id;
    EXPECT_EQ(found[0]->severity, Severity::kInfo) << id;
    EXPECT_NE(found[0]->message.find(unused_reason(f, c.in.plan)), std::string::npos) << id;
    EXPECT_FALSE(f.unused_fix.empty()) << id;
    EXPECT_NE(found[0]->fix.find(f.unused_fix), std::string::npos) << id;
  }
  EXPECT_EQ(unused, 2);
}

}  // namespace
}  // namespace trainsim
