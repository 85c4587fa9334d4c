#pragma once
// Building measured kernel-timing databases: an entry from repeated timings, and the merge of
// databases written by separate runs of the suite (one run per op group fits a time limit).
#include <map>
#include <string>
#include <vector>

#include "kernels/host/stats.hpp"
#include "sim/platform/kernel_db.hpp"

namespace trainsim::kernels {

/// A measured entry: median, p10 and p90 of `seconds` (one sample per timed launch).
KernelDbEntry measured_entry(const KernelShape& shape, const std::vector<double>& seconds);

/// What a run of the suite has measured so far, by shape label.
struct RunResults {
  std::map<std::string, std::vector<double>> samples;  // seconds per timed launch
  std::map<std::string, std::string> sources;          // what ran each shape
  std::map<std::string, KernelDbEntry> kept;           // a resumed database's entries
  std::vector<std::string> failures;                   // "label: what failed" (not timed)
};

/// A resumed database's entries by shape label.
std::map<std::string, KernelDbEntry> kept_entries(const KernelDatabase& db);

/// The database of a run: an entry per timed shape in `shapes`' order (a kept entry where the
/// shape was not timed again), then the kept entries of other shapes; a note per failure; the
/// ceilings are the best plain-GEMM rates and copy bandwidth among the entries.
KernelDatabase run_database(KernelDbMeta meta, const std::vector<KernelShape>& shapes,
                            const RunResults& results);

/// Joins `other`'s measurement texts into `into` (each distinct value once, "; " between), keeps
/// the better ceilings and adds the notes `into` lacks: what merge_databases() does to the
/// metadata, and what a resumed run does with the one it resumes.
void join_meta(KernelDbMeta& into, const KernelDbMeta& other);

/// The metadata of a resumed run: the resumed database's, `now`'s joined in (join_meta), less
/// the resumed run's failure notes (a shape that failed is timed again, and noted again if it
/// fails again).
KernelDbMeta resumed_meta(KernelDbMeta resumed, const KernelDbMeta& now);

/// One measured database from several of the same GPU: the first's GPU block; each text of the
/// measurement block (date, versions, method) with every distinct value joined by "; " (the
/// attention may come from another cuDNN than the GEMMs); the best ceilings; every note once;
/// entries of all, a later database's entry replacing an earlier one of the same shape.
/// InputError when the kinds or GPU names differ.
KernelDatabase merge_databases(const std::vector<KernelDatabase>& dbs);

}  // namespace trainsim::kernels
