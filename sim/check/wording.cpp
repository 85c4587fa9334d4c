#include "sim/check/wording.hpp"

#include "sim/core/format.hpp"
#include "sim/core/percent.hpp"

namespace trainsim {

std::string percent(double fraction) {
  return format_percent(fraction);
}

std::string decoder_counts_text(const Partition& partition) {
  std::string s = "[";
  for (auto c : partition.decoder_counts()) s += (s.size() > 1 ? ", " : "") + std::to_string(c);
  return s + "]";
}

std::string rule_name(const Plan& plan) {
  switch (plan.effective_framework()) {
    case Framework::kNanotron:
      return "nanotron's";
    case Framework::kDeepSpeed:
      return "DeepSpeed's";
    case Framework::kColossalAI:
      return "ColossalAI's";
    case Framework::kMegatron:
      return "Megatron-LM's";
  }
  return "the";
}

std::string stage_name(const Partition& partition, std::int64_t stage) {
  if (partition.chunks == 1) return "stage " + std::to_string(stage);
  const auto p = partition.physical_stages();
  return "virtual stage " + std::to_string(stage) + " (chunk " + std::to_string(stage / p) +
         " of stage " + std::to_string(stage % p) + ")";
}

}  // namespace trainsim
