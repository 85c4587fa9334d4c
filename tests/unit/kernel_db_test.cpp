#include "sim/platform/kernel_db.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "kernels/host/shapes.hpp"
#include "sim/core/error.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// ---- Smooth synthetic kernels: a database generated from them stands in for a measurement
// until the suite has run on an H100. Each is a launch overhead plus work at a rate that grows
// with the size of the problem, like a real kernel's.
double u(double x, double half) {
  return x / (x + half);
}
double synthetic_gemm(const GemmShape& g) {
  const double m = static_cast<double>(g.m), n = static_cast<double>(g.n),
               k = static_cast<double>(g.k);
  const double peak = g.dtype == DType::kFP8 ? 1400e12 : 780e12;
  // The rate saturates unevenly (not a product of linear factors the interpolation could
  // reproduce exactly): sqrt in m and n, linear in k.
  return 4e-6 + shape_flops(g) / (peak * std::sqrt(u(m, 512) * u(n, 512)) * u(k, 256)) +
         shape_bytes(g) / 3.0e12;
}
double synthetic_attention(const AttentionShape& a) {
  const double bh = static_cast<double>(a.batch * a.heads), s = static_cast<double>(a.seq);
  return 6e-6 + shape_flops(a) / (550e12 * u(s, 600) * u(bh, 3));
}
double synthetic_memory(const MemoryShape& m) {
  return 3e-6 + shape_bytes(m) / 2.9e12;
}
double synthetic(const KernelShape& s) {
  if (const auto* g = std::get_if<GemmShape>(&s)) return synthetic_gemm(*g);
  if (const auto* a = std::get_if<AttentionShape>(&s)) return synthetic_attention(*a);
  return synthetic_memory(std::get<MemoryShape>(s));
}

KernelDatabase synthetic_db(const std::vector<KernelShape>& shapes) {
  std::vector<KernelDbEntry> entries;
  for (const auto& s : shapes) {
    KernelDbEntry e;
    e.shape = s;
    e.median_s = synthetic(s);
    entries.push_back(e);
  }
  return KernelDatabase(KernelDbKind::kMeasured, test::synthetic_db_meta(), std::move(entries));
}

// The suite's grids without any catalog shape.
std::vector<KernelShape> grid_shapes() {
  kernels::SuiteOptions opt;
  opt.gemm_grid_lo = 256;
  opt.gemm_grid_hi = 32768;
  opt.gemm_grid_per_octave = 1;
  opt.moe_etps = {};  // no grouped GEMMs
  return kernels::suite_shapes({}, opt);
}

TEST(KernelDb, ExactHit) {
  const GemmShape g{8192, 3072, 4096, DType::kBF16};
  const KernelDatabase db(
      KernelDbKind::kMeasured, test::synthetic_db_meta(),
      {test::db_entry(g, 123e-6), test::db_entry(GemmShape{8192, 3072, 4096, DType::kFP8}, 7e-5)});
  const auto hit = db.lookup(g);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->match, KernelDbMatch::kExact);
  EXPECT_DOUBLE_EQ(hit->seconds, 123e-6);
  // The element type is part of the shape.
  EXPECT_DOUBLE_EQ(db.lookup(GemmShape{8192, 3072, 4096, DType::kFP8})->seconds, 7e-5);
  EXPECT_FALSE(db.lookup(GemmShape{8192, 3072, 2048, DType::kBF16}));
}

TEST(KernelDb, InterpolatesTimeLinearlyInSizeBetweenBrackets) {
  // Memory-bound: 1M and 4M elements bracket 2M; the time is linear in bytes in between.
  const MemoryShape a{"rmsnorm", 256, 4096}, b{"rmsnorm", 1024, 4096}, q{"rmsnorm", 512, 4096};
  const KernelDatabase db(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                          {test::db_entry(a, 10e-6), test::db_entry(b, 20e-6)});
  const auto hit = db.lookup(q);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->match, KernelDbMatch::kInterpolated);
  EXPECT_NEAR(hit->seconds, 10e-6 + 10e-6 / 3.0, 1e-15);
  // Along one GEMM axis: m = 8192 between 4096 and 65536 is 1/15 of the way in FLOPs.
  const KernelDatabase gdb(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                           {test::db_entry(GemmShape{4096, 1024, 2048}, 100e-6),
                            test::db_entry(GemmShape{65536, 1024, 2048}, 1000e-6)});
  EXPECT_NEAR(gdb.lookup(GemmShape{8192, 1024, 2048})->seconds, 100e-6 + 900e-6 / 15.0, 1e-15);
  // The tightest bracket wins: a measurement at 16384 narrows the cell.
  const KernelDatabase tight(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                             {test::db_entry(GemmShape{4096, 1024, 2048}, 100e-6),
                              test::db_entry(GemmShape{65536, 1024, 2048}, 1000e-6),
                              test::db_entry(GemmShape{16384, 1024, 2048}, 300e-6)});
  EXPECT_NEAR(tight.lookup(GemmShape{8192, 1024, 2048})->seconds, 100e-6 + 200e-6 / 3.0, 1e-15);
  // Two axes at once: bilinear in m and n.
  const KernelDatabase two(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                           {test::db_entry(GemmShape{1024, 1024, 512}, 1e-5),
                            test::db_entry(GemmShape{2048, 1024, 512}, 2e-5),
                            test::db_entry(GemmShape{1024, 2048, 512}, 3e-5),
                            test::db_entry(GemmShape{2048, 2048, 512}, 5e-5)});
  const double tm = 512.0 / 1024.0, tn = 256.0 / 1024.0;  // m = 1536, n = 1280
  const double want =
      (1 - tm) * (1 - tn) * 1e-5 + tm * (1 - tn) * 2e-5 + (1 - tm) * tn * 3e-5 + tm * tn * 5e-5;
  EXPECT_NEAR(two.lookup(GemmShape{1536, 1280, 512})->seconds, want, 1e-15);
}

// A router's time per byte depends on its width (its top-k passes over the experts run one
// after another), so its rows and its width are two axes: bilinear in each, and two routers of
// the same bytes keep their own times.
TEST(KernelDb, RouterWidthIsAnAxisOfItsOwn) {
  const KernelDatabase db(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                          {test::db_entry(MemoryShape{"moe_router", 4096, 128}, 10e-6),
                           test::db_entry(MemoryShape{"moe_router", 4096, 256}, 14e-6),
                           test::db_entry(MemoryShape{"moe_router", 8192, 128}, 16e-6),
                           test::db_entry(MemoryShape{"moe_router", 8192, 256}, 22e-6)});
  // 8192 x 128 and 4096 x 256 move the same bytes.
  EXPECT_DOUBLE_EQ(db.lookup(MemoryShape{"moe_router", 8192, 128})->seconds, 16e-6);
  EXPECT_DOUBLE_EQ(db.lookup(MemoryShape{"moe_router", 4096, 256})->seconds, 14e-6);
  const auto mid = db.lookup(MemoryShape{"moe_router", 4096, 192});
  ASSERT_TRUE(mid);
  EXPECT_EQ(mid->match, KernelDbMatch::kInterpolated);
  EXPECT_NEAR(mid->seconds, 12e-6, 1e-15);
  EXPECT_NEAR(db.lookup(MemoryShape{"moe_router", 6144, 192})->seconds, 15.5e-6, 1e-15);
  // Narrower than every measured router: below the range, the roofline's.
  EXPECT_FALSE(db.lookup(MemoryShape{"moe_router", 8192, 64}));
  // Other memory-bound ops stay one axis of bytes: rmsnorm 8192 x 2048 is 4096 x 4096's time.
  const KernelDatabase norm(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                            {test::db_entry(MemoryShape{"rmsnorm", 4096, 4096}, 10e-6)});
  EXPECT_DOUBLE_EQ(norm.lookup(MemoryShape{"rmsnorm", 8192, 2048})->seconds, 10e-6);
}

// Above the measured range, or inside it where no cell has all its corners measured, the rate of
// the nearest measured shape (log distance summed over the axes); never below the range.
TEST(KernelDb, NearestMeasuredRateAboveTheRangeOrWithoutACompleteCell) {
  const KernelDatabase db(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                          {test::db_entry(GemmShape{1024, 1024, 1024}, 5e-6),
                           test::db_entry(GemmShape{2048, 1024, 1024}, 9e-6)});
  const auto above = db.lookup(GemmShape{4096, 1024, 1024});  // beyond the largest m
  ASSERT_TRUE(above);
  EXPECT_EQ(above->match, KernelDbMatch::kNearest);
  EXPECT_NEAR(above->seconds, 2 * 9e-6, 1e-15);         // 2048's rate, twice the FLOPs
  EXPECT_FALSE(db.lookup(GemmShape{512, 1024, 1024}));  // below the smallest m
  EXPECT_FALSE(db.lookup(GemmShape{1536, 512, 1024}));  // below on one axis of three
  EXPECT_FALSE(db.lookup(GemmShape{4096, 512, 1024}));  // above on m but below on n
  // k = 1536 was never measured: 2048 x 1024 x 1024 is nearer (log 4/3 + log 3/2) than
  // 1024 x 1024 x 1024 (2 log 3/2); its rate for 1536 x 1024 x 1536 (9/8 of its FLOPs).
  EXPECT_NEAR(db.lookup(GemmShape{1536, 1024, 1536})->seconds, 9e-6 * 9.0 / 8.0, 1e-15);
  EXPECT_EQ(db.lookup(GemmShape{1536, 1024, 1024})->match, KernelDbMatch::kInterpolated);
  EXPECT_FALSE(db.lookup(MemoryShape{"add", 16, 4096}));  // no such op in the database
  // Bracketed on m and n, but the cell lacks two corners: the nearer diagonal point's rate.
  const KernelDatabase diagonal(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                                {test::db_entry(GemmShape{1024, 1024, 1024}, 5e-6),
                                 test::db_entry(GemmShape{2048, 2048, 1024}, 16e-6)});
  const auto mid = diagonal.lookup(GemmShape{1536, 1536, 1024});
  ASSERT_TRUE(mid);
  EXPECT_EQ(mid->match, KernelDbMatch::kNearest);
  EXPECT_NEAR(mid->seconds, 16e-6 * 9.0 / 16.0, 1e-15);
  // Memory-bound ops scale by bytes.
  const KernelDatabase mem(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                           {test::db_entry(MemoryShape{"rmsnorm", 256, 4096}, 10e-6)});
  EXPECT_NEAR(mem.lookup(MemoryShape{"rmsnorm", 1024, 4096})->seconds, 40e-6, 1e-15);
}

// A complete cell far out is found past many nearer measured values that form none: a grid
// cell 1024-4096 on every axis, and ten other shapes (a later model's, say) whose m, n and k lie
// closer to the query on each axis than the grid's, no two of them sharing a cell. The query
// interpolates in the grid's cell, exactly for a time linear in FLOPs on each axis.
TEST(KernelDb, CompleteCellBeyondNearerMeasuredValues) {
  auto time = [](double m, double n, double k) { return 2e-6 + m * n * k * 1e-15; };
  std::vector<KernelDbEntry> entries;
  for (const std::int64_t m : {1024, 4096}) {
    for (const std::int64_t n : {1024, 4096}) {
      for (const std::int64_t k : {1024, 4096}) {
        entries.push_back(test::db_entry(GemmShape{m, n, k}, time(m, n, k)));
      }
    }
  }
  for (std::int64_t v = 1700; v <= 2600; v += 100) {
    entries.push_back(test::db_entry(GemmShape{v, 5000 - v, v + 100}, 1e-3));
  }
  const KernelDatabase db(KernelDbKind::kMeasured, test::synthetic_db_meta(), entries);
  const auto hit = db.lookup(GemmShape{2048, 2048, 2048});
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->match, KernelDbMatch::kInterpolated);
  EXPECT_NEAR(hit->seconds, time(2048, 2048, 2048), 1e-12);
}

TEST(KernelDb, HeldBackGridPointsInterpolateWithinFivePercent) {
  // Each interior GEMM grid point is left out in turn and interpolated from its neighbours
  // (a factor 2 away); likewise memory-bound and attention points.
  const auto shapes = grid_shapes();
  const KernelDatabase full = synthetic_db(shapes);
  double worst = 0;
  int checked = 0;
  for (std::size_t i = 0; i < shapes.size(); i += 7) {
    std::vector<KernelShape> rest = shapes;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
    const KernelDatabase db = synthetic_db(rest);
    const auto hit = db.lookup(shapes[i]);
    // An edge of the grid: below the range, or above it (the nearest point's rate).
    if (!hit || hit->match == KernelDbMatch::kNearest) continue;
    EXPECT_EQ(hit->match, KernelDbMatch::kInterpolated);
    const double err = std::abs(hit->seconds / synthetic(shapes[i]) - 1);
    worst = std::max(worst, err);
    ++checked;
  }
  EXPECT_GT(checked, 100);
  EXPECT_LT(worst, 0.05);
  EXPECT_EQ(full.lookup(shapes.front())->match, KernelDbMatch::kExact);
}

TEST(KernelDb, CatalogShapesInterpolateFromTheGridWithinFivePercent) {
  // The catalog's shapes, none of them in the database, interpolated from the grids.
  const KernelDatabase db = synthetic_db(grid_shapes());
  double worst = 0;
  int gemms = 0, total = 0;
  for (const char* name : {"llama3.1-8b", "llama3.1-70b", "gpt3-175b", "nemotron4-15b"}) {
    const Model m = test::catalog_model(name);
    for (std::int64_t tp : {1, 2, 4, 8}) {
      for (const auto& s : kernels::model_shapes(m, tp, 1, 4096, Precision::kBF16)) {
        const auto hit = db.lookup(s);
        if (!hit) continue;
        worst = std::max(worst, std::abs(hit->seconds / synthetic(s) - 1));
        gemms += std::holds_alternative<GemmShape>(s) ? 1 : 0;
        ++total;
      }
    }
  }
  EXPECT_GT(gemms, 40);
  EXPECT_GT(total, 150);
  EXPECT_LT(worst, 0.05);
}

TEST(KernelDb, AttentionPrefersTheSameGqaRatio) {
  const AttentionShape mha{1, 4096, 16, 16, 128, true, AttentionPass::kForward};
  const AttentionShape gqa{1, 4096, 16, 2, 128, true, AttentionPass::kForward};
  const AttentionShape big{1, 16384, 16, 2, 128, true, AttentionPass::kForward};
  const KernelDatabase db(
      KernelDbKind::kMeasured, test::synthetic_db_meta(),
      {test::db_entry(mha, 1e-3), test::db_entry(gqa, 0.9e-3), test::db_entry(big, 12e-3)});
  // Between seq 4096 and 16384 at GQA 8: the GQA point is the lower corner; the FLOPs grow as
  // s^2, so seq 8192 is (8192^2 - 4096^2) / (16384^2 - 4096^2) = 1/5 of the way.
  const AttentionShape q{1, 8192, 16, 2, 128, true, AttentionPass::kForward};
  EXPECT_NEAR(db.lookup(q)->seconds, 0.9e-3 + 0.2 * (12e-3 - 0.9e-3), 1e-15);
  // The backward pass is another family: nothing measured.
  auto bwd = q;
  bwd.pass = AttentionPass::kBackward;
  EXPECT_FALSE(db.lookup(bwd));
}

// A grouped GEMM: `groups` products of m x n x k in one launch, its own interpolation family
// per element type and group count.
TEST(KernelDb, GroupedGemmShapes) {
  const GemmShape g{2048, 28672, 4096, DType::kBF16, 4};
  EXPECT_EQ(op_name(g), "grouped_gemm");
  EXPECT_EQ(shape_label(g), "grouped_gemm bf16 g=4 m=2048 n=28672 k=4096");
  EXPECT_DOUBLE_EQ(shape_flops(g), 4 * 2.0 * 2048 * 28672 * 4096);
  EXPECT_DOUBLE_EQ(shape_bytes(g), 4 * 2.0 * (2048.0 * 4096 + 4096.0 * 28672 + 2048.0 * 28672));
  EXPECT_EQ(op_name(GemmShape{2048, 28672, 4096}), "gemm");
  const KernelDatabase db(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                          {test::db_entry(GemmShape{1024, 4096, 4096, DType::kBF16, 4}, 100e-6),
                           test::db_entry(GemmShape{4096, 4096, 4096, DType::kBF16, 4}, 400e-6),
                           test::db_entry(GemmShape{2048, 4096, 4096}, 1e-3)});
  EXPECT_EQ(db.family_key(GemmShape{1, 1, 1, DType::kFP8, 8}), "grouped_gemm/fp8/g8");
  EXPECT_EQ(db.family_key(GemmShape{1, 1, 1, DType::kBF16}), "gemm/bf16");
  // m = 2048 is a third of the way from 1024 to 4096 in FLOPs; the plain GEMM of the same m, n,
  // k is another family and not used.
  EXPECT_NEAR(db.lookup(GemmShape{2048, 4096, 4096, DType::kBF16, 4})->seconds, 200e-6, 1e-15);
  EXPECT_FALSE(db.lookup(GemmShape{2048, 4096, 4096, DType::kBF16, 8}));
}

// A GEMM's layout is part of its shape: named in the label, its own interpolation family, and
// written only when not tn; FP8 GEMMs are tn on Hopper.
TEST(KernelDb, GemmLayouts) {
  const GemmShape nn{8192, 4096, 3072, DType::kBF16, 1, GemmLayout::kNN};
  EXPECT_EQ(shape_label(nn), "gemm bf16 nn m=8192 n=4096 k=3072");
  EXPECT_EQ(shape_label(GemmShape{8192, 4096, 3072}), "gemm bf16 m=8192 n=4096 k=3072");
  EXPECT_DOUBLE_EQ(shape_flops(nn), shape_flops(GemmShape{8192, 4096, 3072}));
  const KernelDatabase db(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                          {test::db_entry(nn, 1e-4)});
  EXPECT_EQ(db.family_key(nn), "gemm/bf16/nn");
  EXPECT_FALSE(db.lookup(GemmShape{8192, 4096, 3072}));  // the tn GEMM is not measured
  const std::string text = kernel_database_json(db);
  EXPECT_EQ(nlohmann::json::parse(text)["entries"][0]["layout"], "nn");
  EXPECT_EQ(parse_kernel_database_json(nlohmann::json::parse(text), "db.json").entries()[0].shape,
            KernelShape(nn));
  auto j = nlohmann::json::parse(text);
  j["entries"][0]["dtype"] = "fp8";
  try {
    parse_kernel_database_json(j, "db.json");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "db.json: $.entries[0].layout: FP8 GEMMs run in the tn layout on Hopper, got nn");
  }
}

// A weight gradient accumulated into FP32 (gradient-accumulation fusion) is a GEMM of its own:
// named in the label, its own family, written only when set; its C is read and written in FP32.
TEST(KernelDb, AccumulatingGemms) {
  const GemmShape acc{6144, 16384, 2048, DType::kFP8, 1, GemmLayout::kTN, true};
  const GemmShape plain{6144, 16384, 2048, DType::kFP8};
  EXPECT_EQ(shape_label(acc), "gemm fp8 acc m=6144 n=16384 k=2048");
  EXPECT_DOUBLE_EQ(shape_flops(acc), shape_flops(plain));
  // A and B in 2 bytes, C: 2 bytes written, or 4 read and 4 written.
  EXPECT_DOUBLE_EQ(shape_bytes(plain), (6144.0 * 2048 + 2048.0 * 16384 + 6144.0 * 16384) * 2);
  EXPECT_DOUBLE_EQ(shape_bytes(acc) - shape_bytes(plain), 6144.0 * 16384 * 6);
  const KernelDatabase db(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                          {test::db_entry(acc, 3e-4), test::db_entry(plain, 2e-4)});
  EXPECT_EQ(db.family_key(acc), "gemm/fp8/acc");
  EXPECT_DOUBLE_EQ(db.lookup(acc)->seconds, 3e-4);
  EXPECT_DOUBLE_EQ(db.lookup(plain)->seconds, 2e-4);
  const auto j = nlohmann::json::parse(kernel_database_json(db));
  EXPECT_EQ(j["entries"][0]["accumulate"], true);
  EXPECT_FALSE(j["entries"][1].contains("accumulate"));
  const auto back = parse_kernel_database_json(j, "db.json");
  EXPECT_EQ(back.entries()[0].shape, KernelShape(acc));
  EXPECT_EQ(back.entries()[1].shape, KernelShape(plain));
}

TEST(KernelDb, JsonRoundTrip) {
  std::vector<KernelDbEntry> entries = {test::db_entry(GemmShape{8192, 3072, 4096}, 1e-4),
                                        test::db_entry(MemoryShape{"adam", 1, 1 << 20}, 2e-5)};
  entries[0].p10_s = 0.9e-4;
  entries[0].p90_s = 1.2e-4;
  entries[0].repetitions = 50;
  entries.push_back(
      test::db_entry(AttentionShape{2, 8192, 16, 2, 128, true, AttentionPass::kBackward}, 3e-3));
  entries.push_back(test::db_entry(GemmShape{2048, 28672, 4096, DType::kFP8, 4}, 5e-4));
  KernelDbMeta meta = test::synthetic_db_meta();
  meta.sm_clock_MHz = 1980;
  meta.copy_GBps = 2900;
  const KernelDatabase db(KernelDbKind::kMeasured, meta, entries);
  const std::string text = kernel_database_json(db);
  const auto back = parse_kernel_database_json(nlohmann::json::parse(text), "db.json");
  EXPECT_EQ(kernel_database_json(back), text);
  ASSERT_EQ(back.entries().size(), 4u);
  EXPECT_EQ(back.entries()[2].shape, KernelShape(entries[2].shape));
  EXPECT_EQ(back.entries()[3].shape, KernelShape(entries[3].shape));
  const auto grouped = nlohmann::json::parse(text)["entries"][3];
  EXPECT_EQ(grouped["op"], "grouped_gemm");
  EXPECT_EQ(grouped["groups"], 4);
  EXPECT_NEAR(back.entries()[0].median_s, 1e-4, 1e-18);
  EXPECT_NEAR(*back.entries()[0].p90_s, 1.2e-4, 1e-18);
  EXPECT_EQ(*back.entries()[0].repetitions, 50);
  EXPECT_EQ(back.meta().date, "2026-01-01T00:00:00Z");
  EXPECT_DOUBLE_EQ(*back.meta().copy_GBps, 2900);
}

TEST(KernelDb, StrictInput) {
  const KernelDatabase db(KernelDbKind::kMeasured, test::synthetic_db_meta(),
                          {test::db_entry(GemmShape{8192, 3072, 4096}, 1e-4)});
  const auto good = nlohmann::json::parse(kernel_database_json(db));
  auto expect_error = [](const nlohmann::json& bad, const std::string& expected) {
    try {
      parse_kernel_database_json(bad, "db.json");
      ADD_FAILURE() << "no error, expected " << expected;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  };
  auto bad = good;
  bad["entries"][0]["mm"] = 1;
  expect_error(bad,
               "db.json: $.entries[0].mm: unknown key (known keys here: accumulate, dtype, k, "
               "layout, m, median_us, n, op, p10_us, p90_us, repetitions, source)");
  bad = good;
  bad["entries"][0]["m"] = 0;
  expect_error(bad, "db.json: $.entries[0].m: must be an integer >= 1, got 0");
  bad = good;
  bad["entries"][0]["op"] = "conv";
  EXPECT_THROW(parse_kernel_database_json(bad, "db.json"), InputError);
  bad = good;
  bad["entries"].push_back(good["entries"][0]);
  expect_error(bad,
               "db.json: $.entries[1]: duplicate shape (gemm bf16 m=8192 n=3072 k=4096), first at "
               "$.entries[0]");
  bad = good;
  bad["entries"][0]["p10_us"] = 200;
  expect_error(bad, "db.json: $.entries[0].p10_us: must not exceed median_us");
  bad = good;
  bad.erase("measurement");
  expect_error(bad, "db.json: $.measurement: required key is missing");
  bad = good;
  bad["kind"] = "published";
  expect_error(bad, "db.json: $.measurement: a published database has no measurement block");
  bad = good;
  bad["version"] = 2;
  expect_error(bad, "db.json: $.version: must be an integer in [1, 1], got 2");
}

TEST(KernelDb, PlatformReferencesItsDatabase) {
  const Platform h100 = test::catalog_platform("h100-sxm-ndr");
  ASSERT_TRUE(h100.kernel_db);
  EXPECT_EQ(h100.kernel_db->kind(), KernelDbKind::kMeasured);
  EXPECT_EQ(h100.kernel_db_name, "h100-sxm/kernels.json");
  EXPECT_EQ(h100.kernel_db->meta().gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_FALSE(test::catalog_platform("a100-sxm-hdr").kernel_db);

  const std::string dir = test::make_temp_dir();
  auto j =
      nlohmann::json::parse(test::read_file(test::source_dir() + "/platforms/h100-sxm-ndr.json"));
  j["kernel_database"] = "missing.json";
  try {
    parse_platform_json(j, dir + "/p.json");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              dir + "/p.json: $.kernel_database: no such file: " + dir + "/missing.json");
  }
}

}  // namespace
}  // namespace trainsim
