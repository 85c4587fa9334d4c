#pragma once
// Building measured kernel-timing databases: an entry from repeated timings, and the merge of
// databases written by separate runs of the suite (one run per op group fits a time limit).
#include <vector>

#include "kernels/host/stats.hpp"
#include "sim/platform/kernel_db.hpp"

namespace trainsim::kernels {

/// A measured entry: median, p10 and p90 of `seconds` (one sample per timed launch).
KernelDbEntry measured_entry(const KernelShape& shape, const std::vector<double>& seconds);

/// One measured database from several of the same GPU: metadata of the first (ceilings from
/// any that has them), entries of all, a later database's entry replacing an earlier one of the
/// same shape. InputError when the kinds or GPU names differ.
KernelDatabase merge_databases(const std::vector<KernelDatabase>& dbs);

}  // namespace trainsim::kernels
