#include "sim/plan/partition.hpp"

#include <gtest/gtest.h>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

TEST(UniformPartition, MegatronDefault) {
  const auto part = test::uniform_partition(test::catalog_model("llama3.1-70b"), 4);
  ASSERT_EQ(part.num_stages(), 4);
  for (std::int64_t s = 0; s < 4; ++s) EXPECT_EQ(part.decoders(s), 20);
  EXPECT_EQ(part.labels(0), (std::vector<std::string>{"embedding", "decoder 0-19"}));
  EXPECT_EQ(part.labels(1), (std::vector<std::string>{"decoder 20-39"}));
  EXPECT_EQ(part.labels(3),
            (std::vector<std::string>{"decoder 60-79", "final_norm", "lm_head", "loss"}));
  EXPECT_TRUE(part.holds(0, BlockKind::kEmbedding));
  EXPECT_FALSE(part.holds(1, BlockKind::kEmbedding));
  EXPECT_TRUE(part.holds(3, BlockKind::kLoss));
  // Every block is in exactly one stage, in order.
  EXPECT_EQ(part.stages.front().begin, 0);
  for (std::size_t s = 1; s < part.stages.size(); ++s) {
    EXPECT_EQ(part.stages[s].begin, part.stages[s - 1].end);
  }
  EXPECT_EQ(part.stages.back().end, static_cast<std::int64_t>(part.blocks.size()));
}

TEST(UniformPartition, OneStageHoldsEverything) {
  const auto part = test::uniform_partition(test::catalog_model("llama3.1-8b"), 1);
  EXPECT_EQ(part.labels(0), (std::vector<std::string>{"embedding", "decoder 0-31", "final_norm",
                                                      "lm_head", "loss"}));
}

}  // namespace
}  // namespace trainsim
