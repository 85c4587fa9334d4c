#include "sim/cost/tp_overlap.hpp"

#include <algorithm>
#include <cassert>

namespace trainsim {

namespace {

// A two-stage pipeline of n equal chunks, the GEMM's first: its makespan beyond the GEMM's own
// time. With the transfer first and chunk 0 local, the same form holds over the n - 1 chunks
// that move (the first compute chunk stands in for the first transfer).
double flow_shop_stall(double gemm_s, double comm_s, std::int64_t chunks, std::int64_t moved) {
  const double g = gemm_s / static_cast<double>(chunks);
  const double c = comm_s / static_cast<double>(moved);
  const double span = moved == chunks ? g + c + static_cast<double>(chunks - 1) * std::max(g, c)
                                      : g + static_cast<double>(moved) * std::max(g, c);
  return std::max(0.0, span - gemm_s);
}

}  // namespace

double overlap_stall(OverlapMethod method, double gemm_s, double comm_s, std::int64_t tp) {
  assert(tp >= 2 && gemm_s >= 0 && comm_s >= 0);
  switch (method) {
    case OverlapMethod::kBulk:
      return std::max(0.0, comm_s - gemm_s);
    case OverlapMethod::kRingExchange:
      return flow_shop_stall(gemm_s, comm_s, tp, tp - 1);
    case OverlapMethod::kPipelined:
      return flow_shop_stall(gemm_s, comm_s, kPipelinedSplits, kPipelinedSplits);
  }
  return 0;
}

}  // namespace trainsim
