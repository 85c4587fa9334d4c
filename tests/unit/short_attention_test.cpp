// Flash attention shorter than every measured sequence (sim/platform/short_attention.hpp):
// priced from the shortest measured sequence by the tiles it runs, not by its FLOPs.
#include "sim/platform/short_attention.hpp"

#include <gtest/gtest.h>

#include "sim/platform/kernel_db.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

TEST(ShortAttention, TilesOfASequence) {
  EXPECT_EQ(attention_query_tiles(1), 1);
  EXPECT_EQ(attention_query_tiles(128), 1);
  EXPECT_EQ(attention_query_tiles(129), 2);
  EXPECT_EQ(attention_query_tiles(200), 2);
  EXPECT_EQ(attention_query_tiles(512), 4);
  EXPECT_EQ(attention_tile_pairs(200, true), 3);  // the diagonal's two tiles and one below
  EXPECT_EQ(attention_tile_pairs(200, false), 4);
  EXPECT_EQ(attention_tile_pairs(512, true), 10);
  EXPECT_EQ(attention_tile_pairs(1024, true), 36);
  EXPECT_EQ(attention_tile_pairs(1024, false), 64);
  const AttentionTileCosts c{20e-9, 13e-9};
  EXPECT_DOUBLE_EQ(attention_tile_work(c, 200, true), 2 * 20e-9 + 3 * 13e-9);
}

TEST(ShortAttention, CostsSolvedFromTwoLengths) {
  const double a = 19e-9, b = 13e-9;
  for (bool causal : {true, false}) {
    const auto c = fit_attention_tile_costs(512, attention_tile_work({a, b}, 512, causal), 1024,
                                            attention_tile_work({a, b}, 1024, causal), causal);
    ASSERT_TRUE(c);
    EXPECT_NEAR(c->per_query_tile, a, 1e-20);
    EXPECT_NEAR(c->per_tile_pair, b, 1e-20);
  }
  // Times that grow faster than the pairs would give a negative fixed cost: the pairs alone.
  // 4a + 10b = 10 and 8a + 36b = 40 solve to a = -0.625, b = 1.25.
  const auto pairs_only = fit_attention_tile_costs(512, 10, 1024, 40, true);
  ASSERT_TRUE(pairs_only);
  EXPECT_EQ(pairs_only->per_query_tile, 0);
  EXPECT_DOUBLE_EQ(pairs_only->per_tile_pair, 1.0);
  // The same tiles at both lengths, or a time that falls with length: no costs.
  EXPECT_FALSE(fit_attention_tile_costs(500, 1, 510, 2, true));
  EXPECT_FALSE(fit_attention_tile_costs(512, 10, 1024, 5, true));
}

AttentionShape causal_forward(std::int64_t batch, std::int64_t heads, std::int64_t seq) {
  return AttentionShape{batch, seq, heads, heads, 128, true, AttentionPass::kForward, DType::kBF16};
}

// A measured family whose time per (batch, head) is exactly a T + b P, at the largest batch x
// heads of each sequence, with a spread on the shortest.
constexpr double kA = 19e-9, kB = 13e-9;
KernelDatabase tiled_db(KernelDbKind kind) {
  const auto at = [](std::int64_t batch, std::int64_t heads, std::int64_t seq) {
    return test::db_entry(
        causal_forward(batch, heads, seq),
        static_cast<double>(batch * heads) * attention_tile_work({kA, kB}, seq, true));
  };
  std::vector<KernelDbEntry> entries = {at(32, 16, 512), at(16, 16, 1024), at(8, 16, 2048),
                                        at(1, 16, 1024)};
  entries[0].p10_s = entries[0].median_s * 0.97;
  entries[0].p90_s = entries[0].median_s * 1.05;
  return KernelDatabase(kind, test::synthetic_db_meta(), std::move(entries));
}

TEST(ShortAttention, ScaledFromTheShortestMeasuredSequenceByItsTiles) {
  const KernelDatabase db = tiled_db(KernelDbKind::kMeasured);
  // 20 documents of 200 tokens on 32 heads: above the batch x heads measured at 512, so the
  // anchor is the 512-token entry's rate on 640 (batch, head) pairs; then 2 query tiles and 3
  // pairs each instead of 4 and 10.
  const auto doc = db.lookup(causal_forward(20, 32, 200));
  ASSERT_TRUE(doc);
  EXPECT_NEAR(doc->seconds, 640 * (2 * kA + 3 * kB), 1e-15);
  EXPECT_EQ(doc->match, KernelDbMatch::kNearest);
  EXPECT_NEAR(doc->spread.p10, 0.97, 1e-12);  // the anchor's
  EXPECT_NEAR(doc->spread.p90, 1.05, 1e-12);
  // Its FLOPs at the 512-token entry's rate would take 2.45 times less: (200/512)^2 of
  // 4a + 10b against 2a + 3b.
  EXPECT_GT(doc->seconds, 2.4 * 640 * (4 * kA + 10 * kB) * (200.0 * 200) / (512.0 * 512));
  // Same tiles, same time: 129 to 256 tokens all run 2 query tiles and 3 pairs; 511 as 512.
  EXPECT_DOUBLE_EQ(db.lookup(causal_forward(20, 32, 129))->seconds, doc->seconds);
  EXPECT_DOUBLE_EQ(db.lookup(causal_forward(20, 32, 256))->seconds, doc->seconds);
  EXPECT_NEAR(db.lookup(causal_forward(10, 32, 511))->seconds,
              db.lookup(causal_forward(10, 32, 512))->seconds, 1e-15);
  // One tile: a + b per (batch, head).
  EXPECT_NEAR(db.lookup(causal_forward(20, 32, 100))->seconds, 640 * (kA + kB), 1e-15);
}

TEST(ShortAttention, NothingBelowTheMeasuredBatchTimesHeadsOrInAPublishedDatabase) {
  // 64 (batch, head) pairs: below every batch x heads the family measured (16 at the least).
  EXPECT_FALSE(tiled_db(KernelDbKind::kMeasured).lookup(causal_forward(1, 8, 200)));
  // Full attention is another family, not measured here.
  AttentionShape full = causal_forward(20, 32, 200);
  full.causal = false;
  EXPECT_FALSE(tiled_db(KernelDbKind::kMeasured).lookup(full));
  // A published database's rates stop at its sequences: the roofline's below them.
  EXPECT_FALSE(tiled_db(KernelDbKind::kPublished).lookup(causal_forward(20, 32, 200)));
}

// The committed H100 database: the costs the two shortest sequences give (512 and 1024 tokens,
// 16 heads) price the next measured length, 2048 tokens at 128 (batch, head) pairs, within 1 %
// forward and 10 % backward (the backward's cost per pair grows with length, so its short end is
// what the fit follows).
TEST(ShortAttention, TheH100DatabasesShortestLengthsPriceTheNext) {
  const KernelDatabase db =
      load_kernel_database(test::source_dir() + "/platforms/h100-sxm/kernels.json");
  for (auto [pass, bound] :
       {std::pair{AttentionPass::kForward, 0.01}, std::pair{AttentionPass::kBackward, 0.10}}) {
    const auto shape = [pass](std::int64_t batch, std::int64_t seq) {
      AttentionShape a = causal_forward(batch, 16, seq);
      a.pass = pass;
      return a;
    };
    const auto per_head = [&](std::int64_t batch, std::int64_t seq) {
      return db.lookup(shape(batch, seq))->seconds / static_cast<double>(batch * 16);
    };
    const auto c = fit_attention_tile_costs(512, per_head(32, 512), 1024, per_head(16, 1024), true);
    ASSERT_TRUE(c);
    EXPECT_GT(c->per_query_tile, 0);
    EXPECT_NEAR(attention_tile_work(*c, 2048, true) / per_head(8, 2048), 1.0, bound);
  }
}

}  // namespace
}  // namespace trainsim
