#pragma once
// A cost model pass's kernels by name, for the gtest suites that check what a pass launches.
#include <gtest/gtest.h>

#include <string>

#include "sim/cost/stage_cost.hpp"

namespace trainsim::test {

/// The kernel of `pass` named `name` (a test failure, and the first kernel, when there is none).
inline const KernelCost& pass_kernel(const PassCost& pass, const std::string& name) {
  for (const auto& k : pass.kernels) {
    if (k.name == name) return k;
  }
  ADD_FAILURE() << "no kernel " << name;
  return pass.kernels.front();
}

/// The FLOPs of every launch of the kernels of `pass` whose names start with `prefix`.
inline double launched_flops(const PassCost& pass, const std::string& prefix) {
  double f = 0;
  for (const auto& k : pass.kernels) {
    if (k.name.starts_with(prefix)) f += k.flops * static_cast<double>(k.count);
  }
  return f;
}

}  // namespace trainsim::test
