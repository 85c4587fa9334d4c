#include "kernels/host/database.hpp"

#include <map>

#include "sim/core/error.hpp"

namespace trainsim::kernels {

KernelDbEntry measured_entry(const KernelShape& shape, const std::vector<double>& seconds) {
  const Summary s = summarize(seconds);
  KernelDbEntry e;
  e.shape = shape;
  e.median_s = s.median;
  e.p10_s = s.p10;
  e.p90_s = s.p90;
  e.repetitions = static_cast<std::int64_t>(s.count);
  return e;
}

KernelDatabase merge_databases(const std::vector<KernelDatabase>& dbs) {
  if (dbs.empty()) fail_input("merge", "no databases to merge");
  KernelDbMeta meta = dbs.front().meta();
  std::vector<KernelDbEntry> entries;
  std::map<std::string, std::size_t> index;
  for (std::size_t d = 0; d < dbs.size(); ++d) {
    const auto& db = dbs[d];
    const std::string where = "merge: database " + std::to_string(d + 1);
    if (db.kind() != dbs.front().kind()) fail_input(where, "is of another kind than the first");
    if (db.meta().gpu_name != meta.gpu_name) {
      fail_input(where, "was taken on " + db.meta().gpu_name + ", the first on " + meta.gpu_name);
    }
    if (!meta.copy_GBps) meta.copy_GBps = db.meta().copy_GBps;
    if (!meta.gemm_bf16_tflops) meta.gemm_bf16_tflops = db.meta().gemm_bf16_tflops;
    if (!meta.gemm_fp8_tflops) meta.gemm_fp8_tflops = db.meta().gemm_fp8_tflops;
    for (const auto& e : db.entries()) {
      auto [it, inserted] = index.emplace(exact_key(e.shape), entries.size());
      if (inserted) {
        entries.push_back(e);
      } else {
        entries[it->second] = e;
      }
    }
  }
  return KernelDatabase(dbs.front().kind(), std::move(meta), std::move(entries));
}

}  // namespace trainsim::kernels
