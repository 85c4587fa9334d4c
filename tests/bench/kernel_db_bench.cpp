// Kernel-database lookups on the committed H100 database: the interpolation's search for a
// complete cell over all the measured values of a family, tightest cell first (at most 16,384
// tried). Each iteration asks a fresh copy of the database (a database remembers its lookups)
// for every off-grid GEMM measured beside it (platforms/h100-sxm/measurements/offgrid.json),
// as plain GEMMs and as weight gradients accumulating into FP32, a family measured at fewer
// depths, where more searches go far or end at the nearest shape. Items per second: lookups.
#include <benchmark/benchmark.h>

#include <vector>

#include "sim/platform/kernel_db.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const KernelDatabase& h100_database() {
  static const KernelDatabase db =
      load_kernel_database(test::source_dir() + "/platforms/h100-sxm/kernels.json");
  return db;
}

std::vector<KernelShape> offgrid_gemms(bool accumulate) {
  std::vector<KernelShape> out;
  const auto measured =
      load_kernel_database(test::source_dir() + "/platforms/h100-sxm/measurements/offgrid.json");
  for (const auto& e : measured.entries()) {
    if (const auto* g = std::get_if<GemmShape>(&e.shape)) {
      GemmShape shape = *g;
      shape.accumulate = accumulate;
      out.push_back(shape);
    }
  }
  return out;
}

void lookups(benchmark::State& st, bool accumulate) {
  const KernelDatabase& db = h100_database();
  const auto shapes = offgrid_gemms(accumulate);
  std::int64_t nearest = 0;
  for (auto _ : st) {
    st.PauseTiming();
    const KernelDatabase fresh(db.kind(), db.meta(), db.entries());
    nearest = 0;
    st.ResumeTiming();
    for (const auto& s : shapes) {
      const auto hit = fresh.lookup(s);
      nearest += hit && hit->match == KernelDbMatch::kNearest ? 1 : 0;
      benchmark::DoNotOptimize(hit);
    }
  }
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(shapes.size()));
  st.counters["shapes"] = static_cast<double>(shapes.size());
  st.counters["nearest"] = static_cast<double>(nearest);
}

void BM_KernelDb_OffGridGemmLookups(benchmark::State& st) {
  lookups(st, false);
}
void BM_KernelDb_OffGridAccumulatingGemmLookups(benchmark::State& st) {
  lookups(st, true);
}

BENCHMARK(BM_KernelDb_OffGridGemmLookups)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_KernelDb_OffGridAccumulatingGemmLookups)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace trainsim
