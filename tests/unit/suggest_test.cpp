// "Did you mean": the edit distance in closed form and the one name a typo most likely meant.
#include "sim/core/suggest.hpp"

#include <gtest/gtest.h>

namespace trainsim {
namespace {

TEST(Suggest, EditDistanceCountsInsertsDeletesReplacesAndSwaps) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // two replaces and an insert
  EXPECT_EQ(edit_distance("recompte", "recompute"), 1u);
  EXPECT_EQ(edit_distance("ab", "ba"), 1u);            // one swap, not two replaces
  EXPECT_EQ(edit_distance("overlpa", "overlap"), 1u);  // a swap at the end
  EXPECT_EQ(edit_distance("gbs", "mbs"), edit_distance("mbs", "gbs"));
}

TEST(Suggest, NearestNameIsTheOnlyCloseOne) {
  const std::vector<std::string> fields = {"tp",      "pp", "dp", "recompute", "recompute_modules",
                                           "seq_len", "vp"};
  EXPECT_EQ(nearest_name("recompte", fields), "recompute");
  EXPECT_EQ(nearest_name("seqlen", fields), "seq_len");
  EXPECT_EQ(nearest_name("tpp", fields), std::nullopt);  // tp and pp: a guess would mislead
  EXPECT_EQ(nearest_name("xyz", fields), std::nullopt);  // nothing within two edits
  // Three edits from "--out" (b and g deleted, s replaced), long enough that half its length
  // would allow them: still more than two, so no guess (it read "did you mean --out?").
  EXPECT_EQ(edit_distance("--bogus", "--out"), 3u);
  EXPECT_EQ(nearest_name("--bogus", {"--out", "--help"}), std::nullopt);
  EXPECT_EQ(nearest_name("tp", fields), std::nullopt);  // known already: nothing to suggest
  // The only name a prefix begins, where no name is within two edits.
  const std::vector<std::string> platforms = {"a100-sxm-hdr", "h100-sxm-ndr", "h200-sxm-ndr"};
  EXPECT_EQ(nearest_name("h100", platforms), "h100-sxm-ndr");
  EXPECT_EQ(nearest_name("h10", platforms), std::nullopt);  // too short to begin one
  EXPECT_EQ(did_you_mean("--deadline", {"--deadline-days", "--top"}),
            "; did you mean --deadline-days?");
  EXPECT_EQ(did_you_mean("--zzz", {"--deadline-days", "--top"}), "");
}

}  // namespace
}  // namespace trainsim
