#pragma once
// Phrases the diagnostics and their fixes share.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/format.hpp"  // and_list, which check wording uses throughout
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// 0.123 -> "12.3 %".
std::string percent(double fraction);
/// Decoder layers per stage: "[10, 30, 20, 20]".
std::string decoder_counts_text(const Partition& partition);
/// Whose partition rule the plan follows: "nanotron's", "Megatron-LM's", ...
std::string rule_name(const Plan& plan);
/// "stage 3", or with interleaving "virtual stage 11 (chunk 1 of stage 3)".
std::string stage_name(const Partition& partition, std::int64_t stage);

}  // namespace trainsim
