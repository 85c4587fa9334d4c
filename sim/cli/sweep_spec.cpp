#include "sim/cli/sweep_spec.hpp"

#include <algorithm>
#include <cmath>

#include "sim/cli/budget_flags.hpp"
#include "sim/cli/scenario.hpp"
#include "sim/cli/scenario_writer.hpp"
#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/core/files.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/suggest.hpp"
#include "sim/plan/plan_schema.hpp"

namespace trainsim {

namespace {

// The most plans one sweep file may name.
constexpr std::int64_t kMaxPlans = 100'000'000;
constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;  // as validate_plan

// A JSON scalar as a flag would take it; InputError at `where` for anything else.
std::string flag_text(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    // 8192.0 as 8192; a value beyond int64 stays as written (converting it is undefined), for
    // the field's check to refuse.
    const double d = v.get<double>();
    if (std::abs(d) < 0x1p63 && d == std::trunc(d)) {
      return std::to_string(static_cast<std::int64_t>(d));
    }
    return v.dump();
  }
  fail_input(where, "must be a number, a string or a boolean, got " + json_excerpt(v));
}

bool is_plan_field(const std::string& name) {
  const auto& names = plan_field_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A plan value checked as its flag would be, the error moved to the file's JSON path.
void check_value(const std::string& field, const std::string& value, const std::string& where) {
  try {
    Plan p;
    apply_plan_flags(p, {{field, value}});
  } catch (const InputError& e) {
    const std::string what = e.what();
    const auto colon = what.find(": ");
    fail_input(where, colon == std::string::npos ? what : what.substr(colon + 2));
  }
}

std::vector<std::int64_t> read_gpus(JsonObject& o) {
  const auto& v = o.raw("gpus");
  std::vector<std::int64_t> gpus;
  const auto one = [&](const nlohmann::json& x, const std::string& where) {
    if (!x.is_number_integer() || x.get<std::int64_t>() < 1) {
      fail_input(where, "must be a positive integer, got " + json_excerpt(x));
    }
    if (x.get<std::int64_t>() > kMaxGpus) {
      fail_input(where, "must be at most " + format_grouped(kMaxGpus) +
                            " GPUs, the most trainsim simulates, got " +
                            format_grouped(x.get<std::int64_t>()));
    }
    gpus.push_back(x.get<std::int64_t>());
  };
  if (v.is_array()) {
    if (v.empty()) o.fail("gpus", "must not be empty");
    for (std::size_t i = 0; i < v.size(); ++i) {
      one(v[i], o.where("gpus") + "[" + std::to_string(i) + "]");
    }
  } else {
    one(v, o.where("gpus"));
  }
  return gpus;
}

void read_plan(JsonObject& o, SweepSpec& spec) {
  if (!o.has("plan")) return;
  const auto& plan = o.raw("plan");
  if (!plan.is_object()) o.fail("plan", "must be an object of plan fields");
  for (const auto& [key, value] : plan.items()) {
    const std::string where = o.where("plan") + "." + key;
    if (!is_plan_field(key)) {
      fail_input(where, "unknown plan field" + did_you_mean(key, plan_field_names()));
    }
    spec.fixed[key] = flag_text(value, where);
    check_value(key, spec.fixed[key], where);
  }
}

// The keys of the top-level object `key` in the order the text lists them (the parsed document
// keeps them sorted).
std::vector<std::string> file_order(std::string_view text, const char* key) {
  const auto ordered = nlohmann::ordered_json::parse(text);
  std::vector<std::string> keys;
  for (auto it = ordered[key].begin(); it != ordered[key].end(); ++it) keys.push_back(it.key());
  return keys;
}

void read_vary(JsonObject& o, std::string_view text, SweepSpec& spec) {
  if (!o.has("vary")) return;
  const auto& vary = o.raw("vary");
  if (!vary.is_object()) o.fail("vary", "must be an object of plan field -> list of values");
  for (const auto& key : file_order(text, "vary")) {
    const auto& values = vary.at(key);
    const std::string where = o.where("vary") + "." + key;
    if (!is_plan_field(key)) {
      fail_input(where, "unknown plan field" + did_you_mean(key, plan_field_names()));
    }
    if (spec.fixed.contains(key)) fail_input(where, "is also fixed in $.plan");
    if (!values.is_array() || values.empty()) fail_input(where, "must be a non-empty list");
    SweepAxis axis{key, {}};
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::string at = where + "[" + std::to_string(i) + "]";
      axis.values.push_back(flag_text(values[i], at));
      check_value(key, axis.values.back(), at);
    }
    spec.axes.push_back(std::move(axis));
  }
}

// "platform": a platform name or path, or a list of them (the scenario's, else the default,
// where absent). `prices`: "price_per_gpu_hour" where it is an object, each platform's (as the
// list names it) own price.
std::vector<SweepPlatform> read_platforms(JsonObject& o, const std::filesystem::path& file,
                                          const std::optional<std::filesystem::path>& base,
                                          const std::optional<nlohmann::json>& prices) {
  const std::string price_path = "$.price_per_gpu_hour";
  if (!o.has("platform")) {
    if (prices) {
      fail_input(file.string() + ": " + price_path,
                 "gives each platform its price: name them in \"platform\"");
    }
    return {{base ? *base
                  : resolve_from_scenario("platforms", kDefaultPlatform, file, o.where("platform")),
             std::nullopt}};
  }
  const auto& v = o.raw("platform");
  std::vector<std::string> names;
  if (v.is_string()) {
    names.push_back(v.get<std::string>());
  } else if (v.is_array() && !v.empty() &&
             std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_string(); })) {
    for (const auto& x : v) names.push_back(x.get<std::string>());
  } else {
    o.fail("platform", "must be a platform (a name or path) or a non-empty list of them, got " +
                           json_excerpt(v));
  }
  std::vector<SweepPlatform> platforms;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string where =
        o.where("platform") + (v.is_array() ? "[" + std::to_string(i) + "]" : "");
    const auto before = names.begin() + static_cast<std::ptrdiff_t>(i);
    if (std::find(names.begin(), before, names[i]) != before) fail_input(where, "is named twice");
    platforms.push_back({resolve_from_scenario("platforms", names[i], file, where), std::nullopt});
  }
  if (!prices) return platforms;
  JsonObject each(*prices, file.string(), price_path);
  for (std::size_t i = 0; i < names.size(); ++i) {
    platforms[i].price_per_gpu_hour = each.number(names[i]);
  }
  each.finish();
  return platforms;
}

// "scenario": a scenario file (a catalog name, or a path relative to the sweep file) the sweep
// starts from: its model, platform and the plan fields it sets, checked as `run` checks them. Its
// dp is what each GPU count leaves, so it is dropped; its GPUs are the sweep's where the sweep
// names none.
struct BaseScenario {
  std::optional<std::filesystem::path> model;
  std::optional<std::filesystem::path> platform;
  std::map<std::string, std::string> plan;
  std::int64_t gpus = 0;
};

BaseScenario read_base_scenario(JsonObject& o, const std::filesystem::path& file) {
  BaseScenario base;
  if (!o.has("scenario")) return base;
  InputRequest request;
  request.scenario =
      resolve_from_scenario("scenarios", o.string("scenario"), file, o.where("scenario")).string();
  request.engine = "analytic";
  const ResolvedInputs in = resolve_inputs(request);
  base.model = in.model_path;
  base.platform = in.platform_path;
  base.gpus = in.plan.world_size();
  const nlohmann::ordered_json plan = plan_as_set(in);
  for (auto it = plan.begin(); it != plan.end(); ++it) {
    if (it.key() != "dp") base.plan[it.key()] = flag_text(it.value(), in.origin.of(it.key()));
  }
  return base;
}

}  // namespace

SweepSpec load_sweep_spec(const std::filesystem::path& file) {
  load_json_file(file);  // its messages for a missing file, a directory or malformed JSON
  return parse_sweep_spec(read_text_file(file), file);
}

SweepSpec parse_sweep_spec(std::string_view text, const std::filesystem::path& file) {
  SweepSpec spec;
  spec.file = file;
  auto j = parse_json_text(text, file.string());
  // A price per platform is read with the platforms, and taken out before the budget is.
  std::optional<nlohmann::json> prices;
  if (j.is_object() && j.contains("price_per_gpu_hour") && j["price_per_gpu_hour"].is_object()) {
    prices = j["price_per_gpu_hour"];
    j.erase("price_per_gpu_hour");
  }
  JsonObject o(j, file.string());
  o.allow({"description", "notes"});
  const BaseScenario base = read_base_scenario(o, file);
  spec.model = base.model && !o.has("model")
                   ? *base.model
                   : resolve_from_scenario("models", o.string("model"), file, o.where("model"));
  spec.platforms = read_platforms(o, file, base.platform, prices);
  spec.gpus = base.gpus > 0 && !o.has("gpus") ? std::vector<std::int64_t>{base.gpus} : read_gpus(o);
  read_plan(o, spec);
  read_vary(o, text, spec);
  // The scenario's fields under the sweep's own: "plan" overrides them, "vary" varies them.
  for (const auto& entry : base.plan) {
    const bool varied = std::any_of(spec.axes.begin(), spec.axes.end(),
                                    [&](const SweepAxis& a) { return a.field == entry.first; });
    if (!varied) spec.fixed.emplace(entry);
  }
  spec.budget = read_budget(o);
  spec.top = o.optional_integer("top").value_or(spec.top);
  spec.deadline_days = o.optional_number("deadline_days", kDeadlineDaysRange);
  o.finish();
  if (sweep_size(spec) > kMaxPlans) {
    fail_input(o.where(o.has("vary") ? "vary" : "gpus"),
               "names more than " + format_grouped(kMaxPlans) +
                   " plans (the GPU counts times the values of each field): vary fewer fields "
                   "or split the sweep");
  }
  return spec;
}

std::string platform_names(const SweepSpec& spec) {
  std::vector<std::string> names;
  for (const auto& p : spec.platforms) names.push_back(p.file.stem().string());
  return and_list(names);
}

std::int64_t sweep_size(const SweepSpec& spec) {
  auto n = static_cast<std::int64_t>(spec.platforms.size() * spec.gpus.size());
  for (const auto& axis : spec.axes) {
    n *= static_cast<std::int64_t>(axis.values.size());
    if (n > kMaxPlans) return kMaxPlans + 1;
  }
  return n;
}

SweepPoint sweep_point(const SweepSpec& spec, std::int64_t index) {
  SweepPoint p;
  p.index = index;
  p.fields = spec.fixed;
  std::int64_t rest = index;
  for (auto axis = spec.axes.rbegin(); axis != spec.axes.rend(); ++axis) {
    const auto n = static_cast<std::int64_t>(axis->values.size());
    p.fields[axis->field] = axis->values[static_cast<std::size_t>(rest % n)];
    rest /= n;
  }
  const auto counts = static_cast<std::int64_t>(spec.gpus.size());
  p.gpus = spec.gpus[static_cast<std::size_t>(rest % counts)];
  p.platform = static_cast<std::size_t>(rest / counts);
  return p;
}

std::variant<Plan, SweepRow> sweep_plan(const SweepPoint& point) {
  Plan plan;
  apply_plan_flags(plan, point.fields);  // checked when the file was read
  const std::int64_t model_parallel = plan.model_parallel_size();
  if (!point.fields.contains("dp")) {
    if (point.gpus % model_parallel != 0) {
      SweepRow row = refused_row(point.index, point.gpus,
                                 "gpus: tp x cp x pp = " + std::to_string(model_parallel) +
                                     " does not divide " + std::to_string(point.gpus) + " GPUs");
      plan.dp = 0;
      row.plan = plan;
      return row;
    }
    plan.dp = point.gpus / model_parallel;
  } else if (plan.world_size() != point.gpus) {
    SweepRow row = refused_row(point.index, point.gpus,
                               "gpus: tp x cp x pp x dp = " + std::to_string(plan.world_size()) +
                                   " is not " + std::to_string(point.gpus) + " GPUs");
    row.plan = plan;
    return row;
  }
  return plan;
}

std::optional<std::string> same_plan_as(const SweepSpec& spec, const SweepPoint& point,
                                        const Plan& plan) {
  std::int64_t stride = 1;
  std::int64_t same = point.index;
  std::vector<std::string> changes;  // "sp false", last axis first
  std::vector<std::string> whys;
  for (auto axis = spec.axes.rbegin(); axis != spec.axes.rend(); ++axis) {
    const auto n = static_cast<std::int64_t>(axis->values.size());
    const PlanField* field = find_plan_field(axis->field);
    const std::string why = field ? unused_reason(*field, plan) : std::string();
    if (!why.empty() && !is_default_value(*field, point.fields.at(axis->field))) {
      const auto d =
          std::find_if(axis->values.begin(), axis->values.end(),
                       [&](const std::string& v) { return is_default_value(*field, v); });
      if (d != axis->values.end()) {
        const std::int64_t digit = point.index / stride % n;
        same += (static_cast<std::int64_t>(d - axis->values.begin()) - digit) * stride;
        changes.push_back(axis->field + " " + *d);
        whys.push_back(why);
      }
    }
    stride *= n;
  }
  if (changes.empty()) return std::nullopt;
  std::reverse(changes.begin(), changes.end());
  std::reverse(whys.begin(), whys.end());
  const std::string first = changes.front().substr(0, changes.front().find(' '));
  return first + ": the same plan as row " + std::to_string(same) + " (" + join(changes, ", ") +
         "), priced there: " + join(whys, "; ");
}

}  // namespace trainsim
