#include "sim/core/suggest.hpp"

#include <algorithm>

namespace trainsim {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic programme: i - 2, i - 1 and i.
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t replace = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, replace});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        row[j] = std::min(row[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(row);
  }
  return previous[b.size()];
}

std::optional<std::string> nearest_name(std::string_view typed,
                                        const std::vector<std::string>& known) {
  constexpr std::size_t kMostEdits = 2;
  std::size_t best = kMostEdits;
  std::vector<const std::string*> nearest;
  for (const auto& name : known) {
    const std::size_t d = edit_distance(typed, name);
    if (d == 0 || d > kMostEdits || 2 * d >= typed.size()) continue;
    if (d < best) {
      nearest.clear();
      best = d;
    }
    if (d == best) nearest.push_back(&name);
  }
  if (nearest.size() == 1) return *nearest.front();
  if (!nearest.empty() || typed.size() < 4) return std::nullopt;
  std::vector<const std::string*> extending;
  for (const auto& name : known) {
    if (name.size() > typed.size() && name.starts_with(typed)) extending.push_back(&name);
  }
  if (extending.size() == 1) return *extending.front();
  return std::nullopt;
}

std::string did_you_mean(std::string_view typed, const std::vector<std::string>& known) {
  const auto name = nearest_name(typed, known);
  return name ? "; did you mean " + *name + "?" : "";
}

}  // namespace trainsim
