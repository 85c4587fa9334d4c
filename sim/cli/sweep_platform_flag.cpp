#include "sim/cli/sweep_platform_flag.hpp"

#include <algorithm>

#include "sim/cli/budget_flags.hpp"
#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"

namespace trainsim {

namespace {

constexpr const char* kFlag = "--platform";

// The price the file gives `platform` (a per-platform price of a file it names the same), if any.
std::optional<double> file_price(const SweepSpec& spec, const std::filesystem::path& platform) {
  for (const SweepPlatform& p : spec.platforms) {
    std::error_code ec;
    if (std::filesystem::equivalent(p.file, platform, ec)) return p.price_per_gpu_hour;
  }
  return std::nullopt;
}

bool file_prices_each(const SweepSpec& spec) {
  return std::any_of(spec.platforms.begin(), spec.platforms.end(),
                     [](const SweepPlatform& p) { return p.price_per_gpu_hour.has_value(); });
}

}  // namespace

std::vector<SweepPlatform> flag_platforms(const std::string& text, const SweepSpec& spec,
                                          bool price_flag) {
  std::vector<std::string> names;
  std::vector<SweepPlatform> platforms;
  std::size_t priced = 0;
  for (std::size_t from = 0; from <= text.size();) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string item = text.substr(from, comma - from);
    from = comma + 1;
    const std::size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    if (name.empty()) {
      fail_input(kFlag, "has an empty platform name in '" + text +
                            "' (platforms are separated by commas: NAME[=PRICE],...)");
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      fail_input(kFlag, "names " + name + " twice");
    }
    names.push_back(name);
    SweepPlatform p{resolve_catalog_entry("platforms", name, kFlag), std::nullopt};
    if (eq != std::string::npos) {
      p.price_per_gpu_hour =
          real_flag(kFlag, item.substr(eq + 1), {0.0, false, TrainingBudget::kMaxPrice, true});
      ++priced;
    }
    platforms.push_back(std::move(p));
  }
  if (priced > 0 && priced < platforms.size()) {
    fail_input(kFlag,
               "gives some platforms a price and not others: give each its price "
               "(NAME=PRICE) or none");
  }
  if (priced > 0 && price_flag) {
    fail_input("--price-per-gpu-hour",
               "sets one price for all, and --platform gives each its own: give one of them");
  }
  if (priced > 0 || price_flag || !file_prices_each(spec)) return platforms;
  for (std::size_t i = 0; i < platforms.size(); ++i) {
    platforms[i].price_per_gpu_hour = file_price(spec, platforms[i].file);
    if (!platforms[i].price_per_gpu_hour) {
      fail_input(kFlag, names[i] + " has no price in " + spec.file.string() +
                            "'s \"price_per_gpu_hour\": give each its price (--platform "
                            "NAME=PRICE,...) or one for all (--price-per-gpu-hour P)");
    }
  }
  return platforms;
}

}  // namespace trainsim
