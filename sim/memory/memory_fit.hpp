#pragma once
// How a plan's peak memory stands against its GPU, in the one place every command asks: check's
// oom diagnostic, compare's fits row, a sweep's memory refusal and validate's memory line.
#include <string_view>

namespace trainsim {

/// Within the GPU; tight, over it only by the allocator fragmentation the platform assumes
/// (check's oom warning: published recipes run there); or over it even without, where no
/// allocator could fit the peak (an oom error). Ordered from best to worst.
enum class MemoryFit { kFits, kTight, kOver };

MemoryFit memory_fit(double peak_bytes, double peak_unfragmented_bytes, double capacity_bytes);

/// "yes", "tight" or "no".
std::string_view to_string(MemoryFit fit);

}  // namespace trainsim
