#include "sim/reshard/layout_spec.hpp"

#include <charconv>
#include <set>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"

namespace trainsim {

namespace {

struct LayoutKey {
  const char* name;
  std::int64_t Plan::*member;
  std::int64_t min;
  std::int64_t max;
};

// The keys a layout may set; sizes are bounded by validate_plan's checks afterwards.
const std::vector<LayoutKey>& layout_keys() {
  static const std::vector<LayoutKey> keys = {
      {"tp", &Plan::tp, 1, std::int64_t{1} << 20},
      {"pp", &Plan::pp, 1, std::int64_t{1} << 20},
      {"dp", &Plan::dp, 1, std::int64_t{1} << 20},
      {"cp", &Plan::cp, 1, std::int64_t{1} << 20},
      {"ep", &Plan::ep, 1, std::int64_t{1} << 20},
      {"etp", &Plan::etp, 1, std::int64_t{1} << 20},
      {"vp", &Plan::vp, 1, std::int64_t{1} << 20},
      {"zero", &Plan::zero, 0, 3},
      {"vocab-divisible-by", &Plan::vocab_divisible_by, 1, std::int64_t{1} << 20}};
  return keys;
}

std::vector<std::string> key_names() {
  std::vector<std::string> names;
  for (const auto& k : layout_keys()) names.emplace_back(k.name);
  return names;
}

void set_key(Plan& plan, const std::string& flag, const std::string& key,
             const std::string& value) {
  for (const auto& k : layout_keys()) {
    if (key != k.name) continue;
    std::int64_t v = 0;
    const char* end = value.data() + value.size();
    auto [ptr, ec] = std::from_chars(value.data(), end, v);
    if (ec != std::errc() || ptr != end || v < k.min || v > k.max) {
      fail_input(flag + " " + key, "must be an integer in [" + std::to_string(k.min) + ", " +
                                       std::to_string(k.max) + "], got '" + value + "'");
    }
    plan.*k.member = v;
    return;
  }
  const std::vector<std::string> names = key_names();
  fail_input(flag, "unknown key '" + key + "'" + did_you_mean(key, names) +
                       " (keys: " + join(names, ", ") + ")");
}

}  // namespace

Plan parse_layout(const std::string& text, const std::string& flag, Plan base) {
  if (text.empty()) fail_input(flag, "must not be empty; write a layout such as tp=2,pp=1,dp=4");
  std::set<std::string> seen;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    if (item.empty()) {
      fail_input(flag, "has an empty item (two commas in a row, or one at an end) in '" + text +
                           "'; write key=value items such as tp=2,pp=1,dp=4");
    }
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      fail_input(flag, "expected key=value items separated by commas (e.g. tp=2,pp=1,dp=4), got '" +
                           item + "'");
    }
    const std::string key = item.substr(0, eq);
    if (!seen.insert(key).second) fail_input(flag, "sets '" + key + "' twice");
    set_key(base, flag, key, item.substr(eq + 1));
    start = comma + 1;
  }
  base.schedule = base.vp > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
  return base;
}

std::string layout_text(const Plan& plan) {
  std::string s = "tp " + std::to_string(plan.tp) + ", pp " + std::to_string(plan.pp);
  if (plan.vp > 1) s += " x vp " + std::to_string(plan.vp);
  if (plan.cp > 1) s += ", cp " + std::to_string(plan.cp);
  s += ", dp " + std::to_string(plan.dp);
  if (plan.ep > 1) s += ", ep " + std::to_string(plan.ep);
  if (plan.expert_tp() != plan.tp) s += ", etp " + std::to_string(plan.expert_tp());
  if (plan.zero > 0) s += ", zero " + std::to_string(plan.zero);
  return s;
}

std::string framework_partition_rule(Framework framework) {
  switch (framework) {
    case Framework::kNanotron:
      return "nanotron";
    case Framework::kDeepSpeed:
      return "deepspeed-parameters";
    case Framework::kMegatron:
    case Framework::kColossalAI:
      return "uniform";
  }
  return "uniform";
}

PlanOrigin layout_origin(const std::string& flag) {
  PlanOrigin origin;
  for (const char* field : {"tp", "pp", "dp", "cp", "ep", "etp", "vp", "zero"}) {
    origin.where[field] = flag + " " + field;
  }
  origin.where["vocab_divisible_by"] = flag + " vocab-divisible-by";
  for (const char* field : {"schedule", "gbs", "partition", "seq_len"}) {
    origin.where[field] = flag;
  }
  return origin;
}

void validate_layout(const Plan& plan, const Model& model, const Platform& platform,
                     const std::string& flag) {
  // What a run would check of the layout; the batch and sequence only have to be admissible.
  Plan probe = plan;
  // Sequence parallelism changes no tensor of a checkpoint; Megatron-LM needs it for an MoE
  // model's TP, so a checkpoint of one at TP above 1 was trained with it.
  probe.sp = plan.tp > 1;
  probe.seq_len = 2 * plan.cp * plan.tp;  // what context parallelism splits evenly
  probe.mbs = 1;
  probe.gbs = plan.dp * plan.pp;
  validate_plan(probe, model, platform, layout_origin(flag));
}

}  // namespace trainsim
