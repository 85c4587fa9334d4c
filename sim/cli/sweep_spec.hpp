#pragma once
// A sweep file: a model, one platform or several, GPU counts, fixed plan fields and lists of
// values to vary. The plans are the product of the lists, numbered in a fixed order (platform
// outermost, then GPU count, then the "vary" keys in the file's order, the last fastest), so that
// a plan's number names it in every run, shard and resume.
//
//   {"model": "llama3.1-70b", "platform": "h100-sxm-ndr", "gpus": [64, 128],
//    "plan": {"seq_len": 8192, "gbs": 512},
//    "vary": {"tp": [2, 4, 8], "pp": [1, 2, 4, 8], "mbs": [1, 2]},
//    "tokens": 15e12, "price_per_gpu_hour": 2.5, "top": 10, "deadline_days": 60}
//
// Several platforms, each with its price: "platform": ["h100-sxm-ndr", "h200-sxm-ndr"],
// "price_per_gpu_hour": {"h100-sxm-ndr": 2.5, "h200-sxm-ndr": 3.5}.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/report/time_to_train.hpp"
#include "sim/sweep/sweep_row.hpp"

namespace trainsim {

struct SweepAxis {
  std::string field;                // a plan field, as a scenario's "plan" names it
  std::vector<std::string> values;  // as its flag takes them
};

/// A platform the sweep prices its plans on, and the price of a GPU-hour there where the sweep
/// gives each platform its own.
struct SweepPlatform {
  std::filesystem::path file;
  std::optional<double> price_per_gpu_hour;
};

struct SweepSpec {
  std::filesystem::path file;
  std::filesystem::path model;
  std::vector<SweepPlatform> platforms;  // one at least
  std::vector<std::int64_t> gpus;
  std::map<std::string, std::string> fixed;  // plan field -> value as its flag takes it
  std::vector<SweepAxis> axes;
  TrainingBudget budget;  // "tokens", "price_per_gpu_hour" (one for all), "gpu_mtbf_hours", ...
  std::int64_t top = 10;
  /// "deadline_days": list the cheapest plans that finish within it (needs "tokens").
  std::optional<double> deadline_days;
};

/// Where the catalog keeps sweep files: `trainsim sweep NAME` finds NAME.json there.
inline constexpr const char* kSweepsFolder = "scenarios/sweeps";

/// The bounds of a deadline in days, for the flag and the key alike.
inline constexpr RealRange kDeadlineDaysRange{0.0, false, 1e6, true};

/// Reads and checks a sweep file: every key known, every plan value one its field accepts (so a
/// typo is an input error, exit 2, not a sweep of refused plans). InputError naming the file and
/// JSON path.
SweepSpec load_sweep_spec(const std::filesystem::path& file);
/// The same for a sweep file's text; `file` names it in messages and anchors relative model and
/// platform paths.
SweepSpec parse_sweep_spec(std::string_view text, const std::filesystem::path& file);

/// The platforms in words: "h100-sxm-ndr", "h100-sxm-ndr and h200-sxm-ndr" (their file names).
std::string platform_names(const SweepSpec& spec);

/// The number of plans (platforms x GPU counts x the product of the lists).
std::int64_t sweep_size(const SweepSpec& spec);

struct SweepPoint {
  std::int64_t index = 0;
  std::size_t platform = 0;  // of SweepSpec::platforms
  std::int64_t gpus = 0;
  std::map<std::string, std::string> fields;  // fixed and varied plan fields
};
SweepPoint sweep_point(const SweepSpec& spec, std::int64_t index);

/// The point's plan, its data parallelism the GPUs left over by tp x cp x pp unless the sweep sets
/// dp; or the row that refuses it when the GPU count does not come out.
std::variant<Plan, SweepRow> sweep_plan(const SweepPoint& point);

/// Where the point's plan is another point's: a varied field it sets changes nothing in it (--sp
/// at tp 1) and the same axis also holds that field's default. Why, naming the row that prices it
/// ("sp: the same plan as row 12 (sp false): ..."); nothing where the plan is its own.
std::optional<std::string> same_plan_as(const SweepSpec& spec, const SweepPoint& point,
                                        const Plan& plan);

}  // namespace trainsim
