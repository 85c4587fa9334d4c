#include "sim/memory/memory_fit.hpp"

namespace trainsim {

MemoryFit memory_fit(double peak_bytes, double peak_unfragmented_bytes, double capacity_bytes) {
  if (peak_bytes <= capacity_bytes) return MemoryFit::kFits;
  return peak_unfragmented_bytes <= capacity_bytes ? MemoryFit::kTight : MemoryFit::kOver;
}

std::string_view to_string(MemoryFit fit) {
  switch (fit) {
    case MemoryFit::kFits:
      return "yes";
    case MemoryFit::kTight:
      return "tight";
    case MemoryFit::kOver:
      return "no";
  }
  return "";
}

}  // namespace trainsim
