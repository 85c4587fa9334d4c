// The references the CUDA suite's routing and FP8 cast-transpose kernels are checked against on
// a GPU (kernels/host/routing_reference), in closed form.
#include "kernels/host/routing_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace trainsim::kernels {
namespace {

using Tensors = std::vector<std::vector<float>>;

std::vector<std::vector<double>> run(const std::string& op, std::size_t rows, std::size_t cols,
                                     const Tensors& t) {
  auto out = routing_reference(op, rows, cols, t);
  EXPECT_TRUE(out.has_value()) << op;
  return out ? *out : std::vector<std::vector<double>>{};
}

TEST(RoutingReference, E4m3RoundsHalfToEvenAndSaturates) {
  EXPECT_EQ(round_to_e4m3(1.0), 1.0);
  EXPECT_EQ(round_to_e4m3(1.0625), 1.0);   // half way between 1 and 1.125: the even mantissa
  EXPECT_EQ(round_to_e4m3(1.1875), 1.25);  // half way between 1.125 and 1.25
  EXPECT_EQ(round_to_e4m3(0.3), 0.3125);   // step 2^-5 in [0.25, 0.5)
  EXPECT_EQ(round_to_e4m3(448.0), 448.0);
  EXPECT_EQ(round_to_e4m3(500.0), 448.0);  // saturated, not infinite
  EXPECT_EQ(round_to_e4m3(-1000.0), -448.0);
  EXPECT_EQ(round_to_e4m3(std::ldexp(1.0, -9)), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(round_to_e4m3(std::ldexp(1.0, -10)), 0.0);                 // half of it: to even 0
  EXPECT_EQ(round_to_e4m3(std::ldexp(3.0, -11)), std::ldexp(1.0, -9));
  EXPECT_EQ(round_to_e4m3(0.0), 0.0);
}

TEST(RoutingReference, TopKTakesTheLowerColumnOnATie) {
  EXPECT_EQ(top_k({1, 3, 3, 2}, 2), (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(top_k({1, 3, 3, 2}, 3), (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_EQ(top_k({5, 5}, 8), (std::vector<std::size_t>{0, 1}));  // k above the row: all of it
}

TEST(RoutingReference, RouterKeepsTheSoftmaxOfItsTopEight) {
  // logits log(1..10): softmax (c + 1) / 55; the top 8 are columns 2..9.
  std::vector<float> logits;
  for (int c = 1; c <= 10; ++c) logits.push_back(std::log(static_cast<float>(c)));
  const auto out = run("moe_router", 1, 10, {logits, std::vector<float>(10)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0], 0.0);
  EXPECT_EQ(out[0][1], 0.0);
  for (std::size_t c = 2; c < 10; ++c) EXPECT_NEAR(out[0][c], (c + 1) / 55.0, 1e-6) << c;
  // dlogits = p (dp - p . dp): p . dp = 0.5 + 0.5 + 0.75
  const auto grad =
      run("moe_router.grad", 1, 4, {{0.5f, 0.25f, 0.25f, 0.0f}, {1, 2, 3, 4}, {0, 0, 0, 0}});
  ASSERT_EQ(grad.size(), 1u);
  EXPECT_EQ(grad[0], (std::vector<double>{-0.375, 0.0625, 0.3125, 0.0}));
}

TEST(RoutingReference, PermutationsRoundTrip) {
  // Two tokens of 8 columns, each routed to 8 rows; the map sends (token, choice) i to row 15 - i.
  const std::size_t T = 2, R = T * kSuiteTopK, C = 8;
  std::vector<float> x(T * C), map(R), eighth(R, 0.125f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 3.0f;
  for (std::size_t i = 0; i < R; ++i) map[i] = static_cast<float>(R - 1 - i);
  const auto y = run("moe_permute", R, C, {x, map, std::vector<float>(R * C)});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0][0], x[C]);  // row 0 is token 1's last choice
  EXPECT_EQ(y[0][15 * C + 7], x[7]);
  const std::vector<float> yf(y[0].begin(), y[0].end());
  const auto back = run("moe_permute.grad", R, C, {yf, map, std::vector<float>(T * C)});
  const auto combined = run("moe_unpermute", R, C, {yf, map, eighth, std::vector<float>(T * C)});
  ASSERT_EQ(back.size(), 1u);
  ASSERT_EQ(combined.size(), 1u);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(back[0][i], 8.0 * static_cast<double>(x[i]));  // each token's 8 copies summed
    EXPECT_EQ(combined[0][i], static_cast<double>(x[i]));    // weighed by 1/8
  }
  // The combine's gradient: each row gets its weight times the token's gradient; each weight
  // the dot product of the token's gradient (all ones) and its row (the token's x).
  const auto g = run("moe_unpermute.grad", R, C,
                     {std::vector<float>(T * C, 1.0f), yf, map, eighth, std::vector<float>(R * C),
                      std::vector<float>(R)});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0], std::vector<double>(R * C, 0.125));
  EXPECT_EQ(g[1][0], -3.0 + -2 + -1 + 0 + 1 + 2 + 3 + 4);  // token 0: x = -3..4
  EXPECT_EQ(g[1][15], 5.0 + 6 + 7 + 8 + 9 + 10 + 11 + 12);
}

TEST(RoutingReference, CastTransposeRoundsBothLayoutsAndTakesTheAmax) {
  const Tensors t = {{1.0f, 500.0f, -0.3f, 0.0625f, 2.0f, -1000.0f}, {}, {}, {0}};
  const auto out = run("fp8_cast_transpose", 2, 3, t);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], (std::vector<double>{1, 448, -0.3125, 0.0625, 2, -448}));
  EXPECT_EQ(out[1], (std::vector<double>{1, 0.0625, 448, 2, -0.3125, -448}));
  EXPECT_EQ(out[2], std::vector<double>{1000});
}

TEST(RoutingReference, CastRoundsInPlaceAndTakesTheAmax) {
  const Tensors t = {{1.0f, 500.0f, -0.3f, 0.0625f, 2.0f, -1000.0f}, {}, {0}};
  const auto out = run("fp8_cast", 2, 3, t);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (std::vector<double>{1, 448, -0.3125, 0.0625, 2, -448}));
  EXPECT_EQ(out[1], std::vector<double>{1000});
}

TEST(RoutingReference, TransposeMovesEveryByte) {
  const Tensors t = {{1.0f, 448.0f, -0.3125f, 0.0625f, 2.0f, -448.0f}, {}};
  const auto out = run("fp8_transpose", 2, 3, t);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (std::vector<double>{1, 0.0625, 448, 2, -0.3125, -448}));
}

TEST(RoutingReference, OtherOpsAreNotItsOwn) {
  EXPECT_FALSE(routing_reference("rmsnorm", 1, 8, {{}, {}}).has_value());
}

}  // namespace
}  // namespace trainsim::kernels
