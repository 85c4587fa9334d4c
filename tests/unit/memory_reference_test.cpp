// The references the CUDA suite's memory-bound kernels are checked against on a GPU
// (kernels/host/memory_reference): forward ops in closed form, and every gradient op against a
// central difference of its forward op (d/dx of sum(dy . forward(x))).
#include "kernels/host/memory_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/host/op_math.hpp"

namespace trainsim::kernels {
namespace {

using Tensors = HostTensors;
using Values = std::vector<double>;

Values first_output(const std::string& op, std::size_t rows, std::size_t cols, const Tensors& t) {
  const auto out = memory_reference(op, rows, cols, t);
  EXPECT_FALSE(out.empty()) << op;
  return out.empty() ? Values{} : out[0];
}

// sum(dy . forward(x)) with input `at` of the tensors replaced by x.
double objective(const std::string& op, std::size_t rows, std::size_t cols, Tensors t,
                 std::size_t at, const std::vector<float>& x, const std::vector<float>& dy) {
  t[at] = x;
  const Values y = first_output(op, rows, cols, t);
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * static_cast<double>(dy[i]);
  return s;
}

// The forward op's derivative along input `at`, by central differences, element by element.
Values numeric_gradient(const std::string& op, std::size_t rows, std::size_t cols, const Tensors& t,
                        std::size_t at, const std::vector<float>& dy) {
  Values g(t[at].size());
  constexpr float h = 1e-2f;
  for (std::size_t i = 0; i < g.size(); ++i) {
    std::vector<float> up = t[at], down = t[at];
    up[i] += h;
    down[i] -= h;
    g[i] = (objective(op, rows, cols, t, at, up, dy) - objective(op, rows, cols, t, at, down, dy)) /
           (2.0 * static_cast<double>(h));
  }
  return g;
}

void expect_near(const Values& got, const Values& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " [" << i << "]";
  }
}

const std::vector<float> kX = {0.3f, -1.2f, 0.8f, 2.0f, -0.5f, 1.1f, -0.7f, 0.1f};
const std::vector<float> kDy = {1.0f, -0.5f, 0.25f, 2.0f, -1.5f, 0.75f, 0.5f, -1.0f};

TEST(MemoryReference, ForwardOpsInClosedForm) {
  EXPECT_EQ(first_output("add", 1, 2, {{1, 2}, {3, 4}, {}}), (Values{4, 6}));
  // RMSNorm of (3, 4): mean square 12.5.
  const double rs = 1 / std::sqrt(12.5 + double{kNormEps});
  expect_near(first_output("rmsnorm", 1, 2, {{3, 4}, {1, 2}, {}}), {3 * rs, 8 * rs}, 1e-12,
              "rmsnorm");
  // LayerNorm of (1, 3): mean 2, variance 1, weight 2 and bias 1.
  const double rstd = 1 / std::sqrt(1 + double{kNormEps});
  expect_near(first_output("layernorm", 1, 2, {{1, 3}, {2, 2}, {1, 1}, {}}),
              {1 - 2 * rstd, 1 + 2 * rstd}, 1e-12, "layernorm");
  // Cross-entropy of equal logits: the softmax 1/C, the loss log C.
  const auto ce = memory_reference("cross_entropy", 1, 4, {{2, 2, 2, 2}, {3}, {}, {}});
  ASSERT_EQ(ce.size(), 2u);
  expect_near(ce[0], Values(4, 0.25), 1e-15, "softmax");
  EXPECT_NEAR(ce[1][0], std::log(4.0), 1e-15);
  // The embedding gathers the rows its ids name; its gradient adds them back.
  EXPECT_EQ(first_output("embedding", 2, 2, {{10, 11, 20, 21, 30, 31}, {2, 0}, {}}),
            (Values{30, 31, 10, 11}));
  EXPECT_EQ(first_output("embedding.grad", 2, 2, {{1, 2, 3, 4}, {1, 1}, {0, 0, 5, 5, 0, 0}}),
            (Values{0, 0, 9, 11, 0, 0}));
  EXPECT_EQ(first_output("grad_norm", 1, 2, {{3, 4}, {}}), (Values{25}));
  // SwiGLU: silu(gate) x up; silu(0) = 0, silu(1) = 1 / (1 + e^-1).
  expect_near(first_output("swiglu", 1, 2, {{0, 1, 5, 3}, {}}), {0, 3 / (1 + std::exp(-1.0))}, 1e-6,
              "swiglu");
  EXPECT_TRUE(memory_reference("no_such_op", 1, 8, {{}}).empty());
}

// One Adam step from zero moments at step 10's bias corrections, in double.
TEST(MemoryReference, AdamStep) {
  const auto out = memory_reference("adam", 1, 1, {{1.0f}, {1.0f}, {0.0f}, {0.0f}, {0.0f}});
  ASSERT_EQ(out.size(), 4u);
  const double m = 0.1, v = 0.05, mh = m / (1 - 0.3486784401), vh = v / (1 - 0.5987369392);
  const double p = 1 - 1e-4 * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * 1);
  EXPECT_NEAR(out[0][0], p, 1e-6);
  EXPECT_NEAR(out[1][0], m, 1e-7);
  EXPECT_NEAR(out[2][0], v, 1e-7);
  EXPECT_EQ(out[3][0], out[0][0]);  // the BF16 weight is the new master weight
}

TEST(MemoryReference, GradientsAreTheForwardOpsDerivatives) {
  const std::vector<float> w = {0.5f, 1.5f, -1.0f, 2.0f};
  const std::vector<float> b = {0.1f, 0.2f, 0.3f, 0.4f};
  // Two rows of four.
  expect_near(first_output("rmsnorm.grad", 2, 4, {kX, w, kDy, {}}),
              numeric_gradient("rmsnorm", 2, 4, {kX, w, {}}, 0, kDy), 1e-3, "rmsnorm.grad");
  expect_near(first_output("layernorm.grad", 2, 4, {kX, w, kDy, {}}),
              numeric_gradient("layernorm", 2, 4, {kX, w, b, {}}, 0, kDy), 1e-3, "layernorm.grad");
  for (const char* op : {"gelu", "relu", "squared_relu"}) {
    std::vector<float> x = kX;
    expect_near(first_output(std::string(op) + ".grad", 2, 4, {x, kDy, {}}),
                numeric_gradient(op, 2, 4, {x, {}}, 0, kDy), 2e-3, op);
  }
  // Gated: two rows of [gate | up], four wide each; the gradient of both halves.
  std::vector<float> in;
  for (std::size_t i = 0; i < 16; ++i) in.push_back(kX[i % 8] * (i < 8 ? 1.0f : -0.5f));
  for (const char* op : {"swiglu", "geglu"}) {
    expect_near(first_output(std::string(op) + ".grad", 2, 4, {kDy, in, {}}),
                numeric_gradient(op, 2, 4, {in, {}}, 0, kDy), 2e-3, op);
  }
  // Cross-entropy's gradient is the loss's derivative by the logits.
  const std::vector<float> targets = {2, 0};
  const auto ce = memory_reference("cross_entropy", 2, 4, {kX, targets, {}, {}});
  ASSERT_EQ(ce.size(), 2u);
  const std::vector<float> softmax(ce[0].begin(), ce[0].end());
  Values loss_grad(8);
  for (std::size_t i = 0; i < 8; ++i) {
    std::vector<float> up = kX, down = kX;
    up[i] += 1e-3f;
    down[i] -= 1e-3f;
    const auto lu = memory_reference("cross_entropy", 2, 4, {up, targets, {}, {}})[1];
    const auto ld = memory_reference("cross_entropy", 2, 4, {down, targets, {}, {}})[1];
    loss_grad[i] = (lu[i / 4] - ld[i / 4]) / 2e-3;
  }
  expect_near(first_output("cross_entropy.grad", 2, 4, {softmax, targets, {}}), loss_grad, 1e-3,
              "cross_entropy.grad");
}

// RoPE's gradient rotates back: applied to the rotated rows it returns the input.
TEST(MemoryReference, RopeGradientUndoesTheRotation) {
  const Values y = first_output("rope", 2, 4, {kX, {}});
  const std::vector<float> yf(y.begin(), y.end());
  const Values back = first_output("rope.grad", 2, 4, {yf, {}});
  Values want(kX.begin(), kX.end());
  expect_near(back, want, 1e-6, "rope.grad(rope(x))");
  EXPECT_EQ(y[0], double{kX[0]});  // row 0: position 0, no rotation
}

}  // namespace
}  // namespace trainsim::kernels
