// The kernel database's run-to-run spread (p10/p90 over the median) carried through a lookup, the
// plan's time-weighted spread, and the band it scales where the calibration fitted the locally
// weighted form.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/platform/calibration.hpp"
#include "sim/platform/kernel_db.hpp"
#include "sim/platform/platform.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

KernelDbEntry entry(KernelShape shape, double median, double p10, double p90) {
  KernelDbEntry e;
  e.shape = std::move(shape);
  e.median_s = median;
  e.p10_s = p10;
  e.p90_s = p90;
  return e;
}

KernelDatabase db(std::vector<KernelDbEntry> entries) {
  KernelDbMeta meta;
  meta.gpu_name = "test GPU";
  return KernelDatabase(KernelDbKind::kMeasured, meta, std::move(entries));
}

TEST(KernelSpread, ALookupCarriesItsEntriesSpread) {
  const MemoryShape a{"rmsnorm", 256, 4096}, b{"rmsnorm", 1024, 4096};
  const auto d = db({entry(a, 10e-6, 9e-6, 12e-6), entry(b, 20e-6, 19e-6, 21e-6)});
  // Exact: the entry's own ratios.
  const auto exact = d.lookup(a);
  EXPECT_DOUBLE_EQ(exact->spread.p10, 0.9);
  EXPECT_DOUBLE_EQ(exact->spread.p90, 1.2);
  // Interpolated a third of the way in bytes: the corners' ratios with the same weights.
  const auto mid = d.lookup(MemoryShape{"rmsnorm", 512, 4096});
  ASSERT_EQ(mid->match, KernelDbMatch::kInterpolated);
  EXPECT_NEAR(mid->spread.p10, 2.0 / 3 * 0.9 + 1.0 / 3 * 0.95, 1e-12);
  EXPECT_NEAR(mid->spread.p90, 2.0 / 3 * 1.2 + 1.0 / 3 * 1.05, 1e-12);
  // Above the range: the nearest entry's.
  const auto above = d.lookup(MemoryShape{"rmsnorm", 4096, 4096});
  ASSERT_EQ(above->match, KernelDbMatch::kNearest);
  EXPECT_DOUBLE_EQ(above->spread.p90, 1.05);
  // An entry without percentiles has no spread.
  KernelDbEntry bare;
  bare.shape = a;
  bare.median_s = 1e-5;
  EXPECT_DOUBLE_EQ(db({bare}).lookup(a)->spread.width(), 0.0);
}

KernelCost kernel(double seconds, std::int64_t count, TimeSource source, TimeSpread spread) {
  KernelCost k;
  k.count = count;
  k.time = {seconds, source, spread};
  return k;
}

TEST(KernelSpread, ThePlansSpreadWeighsEachTimedKernelByItsTime) {
  CostModel costs;
  costs.stages.resize(2);
  costs.stages[0].forward.kernels = {kernel(1e-3, 2, TimeSource::kMeasured, {0.95, 1.05}),
                                     kernel(5e-3, 1, TimeSource::kRoofline, {})};
  costs.stages[1].backward.kernels = {kernel(2e-3, 1, TimeSource::kInterpolated, {0.9, 1.2})};
  costs.stages[1].recompute.kernels = {kernel(1e-3, 2, TimeSource::kNearest, {0.98, 1.02})};
  // Weights 2, 2 and 2 ms; the roofline kernel has no known spread and is left out.
  const TimeSpread s = kernel_spread(costs);
  EXPECT_NEAR(s.p10, (0.95 + 0.9 + 0.98) / 3, 1e-12);
  EXPECT_NEAR(s.p90, (1.05 + 1.2 + 1.02) / 3, 1e-12);
  // Nothing timed by the database: no spread.
  costs.stages[0].forward.kernels.resize(1);
  costs.stages[0].forward.kernels[0].time.source = TimeSource::kRoofline;
  costs.stages[1] = {};
  EXPECT_DOUBLE_EQ(kernel_spread(costs).width(), 0.0);
}

TEST(KernelSpread, TheWeightedBandScalesWithThePlansSpreadAndFallsBackToThePlainOne) {
  ResidualBand band;
  band.p10 = -0.03;
  band.p90 = 0.06;
  EXPECT_FALSE(band.weighted());
  EXPECT_DOUBLE_EQ(band.low(10, 0.05), 10 * 0.97);  // not fitted: the plain band at any spread
  band.per_spread_p10 = -0.8;
  band.per_spread_p90 = 1.0;
  EXPECT_TRUE(band.weighted());
  EXPECT_DOUBLE_EQ(band.low(10, 0.05), 10 * (1 - 0.8 * 0.05));
  EXPECT_DOUBLE_EQ(band.high(10, 0.05), 10 * (1 + 1.0 * 0.05));
  EXPECT_TRUE(band.holds(10, 10.49, 0.05));
  EXPECT_FALSE(band.holds(10, 10.51, 0.05));
  // A plan without a measured spread: the plain band.
  EXPECT_DOUBLE_EQ(band.high(10, 0), 10 * 1.06);
}

TEST(KernelSpread, ThePlatformFileGivesTheWeightedBandWithinBounds) {
  auto j =
      nlohmann::json::parse(test::read_file(test::source_dir() + "/platforms/h100-sxm-ndr.json"));
  j.erase("kernel_database");
  j["calibration"]["residual_per_spread_p10"] = -0.7;
  j["calibration"]["residual_per_spread_p90"] = 1.1;
  const Platform p = parse_platform_json(j, "p.json");
  EXPECT_DOUBLE_EQ(p.calibration.band.per_spread_p10, -0.7);
  EXPECT_DOUBLE_EQ(p.calibration.band.per_spread_p90, 1.1);
  j["calibration"]["residual_per_spread_p90"] = -1;
  try {
    parse_platform_json(j, "p.json");
    FAIL() << "accepted a negative upper bound";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("residual_per_spread_p90"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainsim
