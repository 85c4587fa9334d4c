// The memory search: the fastest plan that fits on a cluster, found among every layout (TP, CP,
// PP, DP and, for a mixture-of-experts model, EP) by simulating from the lowest step floor up,
// is the one simulating every layout finds; and the floor is under every step it bounds.
#include "sim/search/memory_fix.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/cli/scenario.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/search/candidates.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

struct Search {
  ResolvedInputs in;
  Partition partition;

  explicit Search(const std::string& model, std::map<std::string, std::string> flags) {
    InputRequest req;
    req.model = model;
    req.platform = "h100-sxm-ndr";
    req.plan_flags = std::move(flags);
    in = resolve_inputs(req);
    partition = build_partition(in.model, in.platform, in.plan);
  }

  PlanSpace space() { return PlanSpace(in.model, in.platform, in.plan, partition); }

  // Every layout simulated: each one's lowest ZeRO stage that fits, at the first recomputation
  // where any does; the fastest step, and how many layouts fit. Checks each floor on the way.
  std::pair<double, int> exhaustive(PlanSpace& space) {
    const std::int64_t gpus = in.plan.world_size();
    for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      double fastest = std::numeric_limits<double>::infinity();
      int fitting = 0;
      for (const ZeroLadder& ladder : layouts_on(in.plan, gpus, 8, in.model, r)) {
        for (const Plan& p : ladder) {
          const Candidate c = search_candidate(space, p);
          const std::optional<double> floor = space.fitting_step_floor(c);
          if (!floor) continue;
          const Outcome o = space.price(c, Need::kFits);
          EXPECT_TRUE(o) << o.reason();
          if (!o) break;
          EXPECT_GT(*floor, 0.0);
          EXPECT_LE(*floor, o->step_time_s) << to_string(p.rank_order);
          fastest = std::min(fastest, o->step_time_s);
          ++fitting;
          break;
        }
      }
      if (fitting > 0) return {fastest, fitting};
    }
    return {0.0, 0};
  }
};

void expect_search_finds_the_fastest(Search& s, int min_fitting) {
  PlanSpace searched = s.space();
  const std::optional<Priced> found = fastest_fitting_plan(searched, s.in.plan.world_size());
  const std::int64_t simulated = searched.simulations();
  PlanSpace all = s.space();
  const auto [fastest, fitting] = s.exhaustive(all);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->step_time_s, fastest);
  EXPECT_GE(fitting, min_fitting);
  // The floors spare simulations: fewer than one per fitting layout.
  EXPECT_LT(simulated, fitting);
}

// Mixtral 8x7B on 16 GPUs does not fit unsharded; the layouts that do mostly shard its experts.
TEST(MemoryFix, FastestFittingMixtureOfExpertsPlanIsTheFastestOfEveryLayout) {
  Search s("mixtral-8x7b", {{"gpus", "16"}, {"seq_len", "4096"}, {"gbs", "64"}});
  expect_search_finds_the_fastest(s, 10);
  PlanSpace space = s.space();
  const std::optional<Priced> found = fastest_fitting_plan(space, 16);
  ASSERT_TRUE(found.has_value());
  EXPECT_GT(found->plan.ep, 1);  // 93 GB of BF16 weights alone do not fit a GPU unsharded
}

// Llama 3.1 8B at a 32k sequence on 8 GPUs: activations, which CP and TP divide, decide.
TEST(MemoryFix, FastestFittingLongSequencePlanIsTheFastestOfEveryLayout) {
  Search s("llama3.1-8b", {{"gpus", "8"}, {"seq_len", "32768"}, {"gbs", "8"}});
  expect_search_finds_the_fastest(s, 5);
}

// The floor is under the analytic step of every shipped scenario that fits (interleaved, FP8 with
// its first forward, multi-token prediction, the expert all-to-all overlap, LoRA) and of a
// zero-bubble and a GPipe plan, and not so far under it as to spare nothing.
TEST(MemoryFix, StepFloorIsUnderEveryShippedScenariosStep) {
  std::vector<InputRequest> requests;
  for (const char* dir : {"/scenarios", "/scenarios/teaching"}) {
    for (const auto& e : std::filesystem::directory_iterator(test::source_dir() + dir)) {
      if (e.path().extension() != ".json") continue;
      InputRequest req;
      req.scenario = e.path().string();
      requests.push_back(req);
    }
  }
  for (const char* schedule : {"zb-h1", "gpipe"}) {
    InputRequest req;
    req.model = "llama3.1-8b";
    req.platform = "h100-sxm-ndr";
    req.plan_flags = {{"pp", "4"},   {"dp", "2"},           {"seq_len", "4096"},   {"gbs", "32"},
                      {"zero", "1"}, {"recompute", "full"}, {"schedule", schedule}};
    requests.push_back(req);
  }
  int bounded = 0;
  std::string skipped;
  for (const InputRequest& req : requests) {
    const ResolvedInputs in = resolve_inputs(req);
    const Partition partition = build_partition(in.model, in.platform, in.plan);
    PlanSpace space(in.model, in.platform, in.plan, partition);
    const std::optional<double> floor = space.fitting_step_floor({in.plan});
    if (!floor) {
      skipped +=
          " " + (in.scenario_name.empty() ? req.plan_flags.at("schedule") : in.scenario_name);
      continue;
    }
    EXPECT_LE(*floor, space.baseline()) << req.scenario.value_or(req.plan_flags.at("schedule"));
    EXPECT_GT(*floor, 0.5 * space.baseline()) << req.scenario.value_or("");
    ++bounded;
  }
  // All but the three that do not fit: llama3.1-70b-64gpu, teaching-memory, and
  // llama3.1-8b-cp2-8gpu with the fragmentation trainsim assumes (its warning: it may run).
  EXPECT_EQ(bounded, 8) << "do not fit or have a defect:" << skipped;
}

}  // namespace
}  // namespace trainsim
