// DeepSpeed PipelineModule partitioning (deepspeed/runtime/pipe/module.py, _partition_layers, and
// deepspeed/runtime/utils.py), reproduced with its arithmetic.
#include <algorithm>
#include <map>
// GCC 12 reports a false "may be used uninitialized" inside libstdc++'s <regex> at -O1 with the
// sanitizers; the regex is only compiled and searched here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <regex>
#pragma GCC diagnostic pop

#include "sim/core/error.hpp"
#include "sim/plan/partition.hpp"

namespace trainsim {

namespace {

constexpr std::size_t kMaxTypePattern = 256;
// libstdc++ reads a repetition count or a back-reference's number into a long unchecked: twenty
// digits were signed overflow (undefined behaviour) before the pattern was refused.
constexpr std::size_t kMaxPatternDigits = 9;

// The longest run of decimal digits in `pattern`.
std::size_t longest_number(const std::string& pattern) {
  std::size_t longest = 0;
  std::size_t run = 0;
  for (char c : pattern) {
    run = c >= '0' && c <= '9' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

// A type:REGEX pattern compiled as Python's re.search reads it (ECMAScript, case-insensitive).
// With libstdc++, matched by its Thompson-NFA executor, in time polynomial in the pattern and the
// name: its default backtracking one ran for hours on "(.*)*(.*)*(.*)*Z". Back-references are then
// refused, and a pattern of more than 100,000 NFA states; a long pattern overflowed the stack of
// the recursive parser, hence the length bound.
std::regex type_regex(const std::string& pattern) {
  auto flags = std::regex::ECMAScript | std::regex::icase;
#if defined(__GLIBCXX__)
  flags |= std::regex_constants::__polynomial;
#endif
  return std::regex(pattern, flags);
}

}  // namespace

void check_deepspeed_type_pattern(const std::string& pattern, const std::string& where) {
  if (pattern.size() > kMaxTypePattern) {
    fail_input(where, "deepspeed-type: takes a regular expression of at most " +
                          std::to_string(kMaxTypePattern) + " characters, got " +
                          std::to_string(pattern.size()));
  }
  if (longest_number(pattern) > kMaxPatternDigits) {
    fail_input(where, "deepspeed-type: takes numbers of at most " +
                          std::to_string(kMaxPatternDigits) + " digits in its regular expression");
  }
  try {
    type_regex(pattern);
  } catch (const std::regex_error& e) {
    fail_input(where, "invalid regular expression \"" + pattern + "\": " + e.what());
  }
}

std::vector<std::int64_t> deepspeed_partition_uniform(std::int64_t num_items,
                                                      std::int64_t num_parts) {
  std::vector<std::int64_t> parts(static_cast<std::size_t>(num_parts) + 1, 0);
  if (num_items <= num_parts) {
    for (std::int64_t p = 0; p <= num_parts; ++p)
      parts[static_cast<std::size_t>(p)] = std::min(p, num_items);
    return parts;
  }
  const std::int64_t chunk = num_items / num_parts;
  const std::int64_t residual = num_items - chunk * num_parts;
  for (std::int64_t p = 0; p <= num_parts; ++p) {
    // The first `residual` parts get one more item each.
    parts[static_cast<std::size_t>(p)] = p * chunk + std::min(p, residual);
  }
  return parts;
}

namespace {

// bisect.bisect_left over prefix sums compared with a float target.
std::int64_t bisect_left(const std::vector<std::int64_t>& w, double x, std::int64_t lo,
                         std::int64_t hi) {
  while (lo < hi) {
    const std::int64_t mid = (lo + hi) / 2;
    if (static_cast<double>(w[static_cast<std::size_t>(mid)]) < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

struct Probe {
  std::vector<std::int64_t> parts;
  bool success;
};

// _lprobe: can the prefix-summed weights be cut into num_parts parts of at most `bottleneck`?
Probe lprobe(const std::vector<std::int64_t>& w, std::int64_t num_parts, double bottleneck) {
  const auto num_items = static_cast<std::int64_t>(w.size());
  const double total = static_cast<double>(w.back());
  std::vector<std::int64_t> parts(static_cast<std::size_t>(num_parts) + 1, num_items);
  parts[0] = 0;
  double bsum = bottleneck;
  const std::int64_t chunk = num_items / num_parts;
  std::int64_t step = chunk;
  for (std::int64_t p = 1; p < num_parts; ++p) {
    while (step < num_items && static_cast<double>(w[static_cast<std::size_t>(step)]) < bsum) {
      step += chunk;
    }
    auto& part = parts[static_cast<std::size_t>(p)];
    part = bisect_left(w, bsum, step - chunk, std::min(step, num_items));
    if (part == num_items) {
      const auto prev = parts[static_cast<std::size_t>(p - 1)];
      const double part_size =
          static_cast<double>(w.back()) - static_cast<double>(w[static_cast<std::size_t>(prev)]);
      return {parts, part_size < bottleneck};
    }
    // weights[parts[p] - 1] in Python: index -1 (a first part of zero items) is the last one.
    const std::int64_t prev = part > 0 ? part - 1 : num_items - 1;
    bsum = static_cast<double>(w[static_cast<std::size_t>(prev)]) + bottleneck;
  }
  return {parts, bsum >= total};
}

}  // namespace

std::vector<std::int64_t> deepspeed_partition_balanced(const std::vector<std::int64_t>& weights,
                                                       std::int64_t num_parts) {
  const auto num_items = static_cast<std::int64_t>(weights.size());
  if (num_items <= num_parts) return deepspeed_partition_uniform(num_items, num_parts);
  std::vector<std::int64_t> prefix(weights);
  for (std::size_t i = 1; i < prefix.size(); ++i) prefix[i] += prefix[i - 1];
  constexpr double kEps = 1e-3;
  const double total = static_cast<double>(prefix.back());
  double lower = total / static_cast<double>(num_parts);
  double upper = total;
  while (upper > lower + kEps) {
    const double mid = lower + (upper - lower) / 2;
    if (lprobe(prefix, num_parts, mid).success) {
      upper = mid;
    } else {
      lower = mid + kEps;
    }
  }
  return lprobe(prefix, num_parts, upper).parts;
}

std::string deepspeed_layer_name(const Model& model, BlockKind kind) {
  switch (kind) {
    case BlockKind::kEmbedding:
      return "EmbeddingPipe";
    case BlockKind::kDecoder:
      return "ParallelTransformerLayerPipe";
    case BlockKind::kMtp:
      return "MultiTokenPrediction";  // never built: DeepSpeed has none (validate_plan)
    case BlockKind::kFinalNorm:
      return model.norm == NormKind::kLayerNorm ? "MixedFusedLayerNorm" : "MixedFusedRMSNorm";
    case BlockKind::kLmHead:
      return model.tied_embeddings ? "EmbeddingPipe" : "LMHeadPipe";
    case BlockKind::kCast:
      return "float16_to_fp32";
    case BlockKind::kLoss:
      return "CrossEntropy";
  }
  return "?";
}

Partition deepspeed_partition(const Model& model, const PartitionSpec& spec, std::int64_t pp,
                              const std::vector<std::int64_t>& layer_params) {
  std::vector<Block> layers = model_blocks(model);
  layers.pop_back();  // the loss function is not a layer; it runs on the last stage
  const auto n = static_cast<std::int64_t>(layers.size());
  std::vector<std::int64_t> parts;
  std::string method;
  if (spec.rule == PartitionRule::kDeepSpeedUniform) {
    parts = deepspeed_partition_uniform(n, pp);
    method = "deepspeed-uniform";
  } else if (spec.rule == PartitionRule::kDeepSpeedParameters) {
    parts = deepspeed_partition_balanced(layer_params, pp);
    method = "deepspeed-parameters";
  } else {
    const std::regex re = type_regex(spec.argument);
    std::map<BlockKind, std::int64_t> matches;  // one search per class name, not per layer
    std::vector<std::int64_t> binary;
    for (const auto& b : layers) {
      auto it = matches.find(b.kind);
      if (it == matches.end()) {
        it = matches.emplace(b.kind, std::regex_search(deepspeed_layer_name(model, b.kind), re))
                 .first;
      }
      binary.push_back(it->second);
    }
    parts = deepspeed_partition_balanced(binary, pp);
    method = "deepspeed-type:" + spec.argument;
  }
  std::vector<Block> blocks = std::move(layers);
  blocks.push_back({BlockKind::kLoss});
  parts.back() = static_cast<std::int64_t>(blocks.size());
  return partition_from_bounds(std::move(method), std::move(blocks), parts);
}

}  // namespace trainsim
