#pragma once
// How well a measured kernel database predicts kernels it does not hold: grid points held back
// in turn, and measurements of shapes no grid holds. Shared by the tests and the report tool.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/host/shapes.hpp"
#include "sim/platform/kernel_db.hpp"

namespace trainsim::kernels {

/// gemm, grouped_gemm (either with " acc" when accumulating into FP32), attention or memory.
std::string kernel_class(const KernelShape& shape);

/// |interpolated / measured - 1| of each checked shape, by kernel class (summarize() them).
using ErrorsByClass = std::map<std::string, std::vector<double>>;

/// The suite's grid shapes (the shapes suite_shapes() adds beside the catalog's), by label.
std::set<std::string> grid_labels(const SuiteOptions& options);

/// Every `every`-th grid point of each interpolation family (in the database's order) left out
/// in turn and interpolated from the rest of its family; points the rest does not bracket (the
/// edges of a grid) are skipped.
ErrorsByClass held_back_errors(const KernelDatabase& db, const std::set<std::string>& grid,
                               std::size_t every = 7);

/// Each measured entry the database does not hold, looked up in it (those it cannot bracket
/// are skipped).
ErrorsByClass offgrid_errors(const KernelDatabase& db, const std::vector<KernelDbEntry>& measured);

}  // namespace trainsim::kernels
