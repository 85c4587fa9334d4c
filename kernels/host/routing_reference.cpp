#include "kernels/host/routing_reference.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>

namespace trainsim::kernels {

namespace {

using Tensors = std::vector<std::vector<double>>;  // the inputs, widened
using Outputs = std::vector<std::vector<double>>;

std::size_t at(const std::vector<double>& map, std::size_t i) {
  return static_cast<std::size_t>(map[i]);
}

Outputs router(std::size_t R, std::size_t C, const Tensors& t) {
  std::vector<double> probs(R * C, 0.0);
  const std::size_t k = std::min<std::size_t>(kSuiteTopK, C);
  for (std::size_t r = 0; r < R; ++r) {
    const std::vector<double> row(t[0].begin() + static_cast<std::ptrdiff_t>(r * C),
                                  t[0].begin() + static_cast<std::ptrdiff_t>((r + 1) * C));
    const double m = *std::max_element(row.begin(), row.end());
    double s = 0;
    for (double v : row) s += std::exp(v - m);
    for (std::size_t c : top_k(row, k)) probs[r * C + c] = std::exp(row[c] - m) / s;
  }
  return {probs};
}

Outputs router_grad(std::size_t R, std::size_t C, const Tensors& t) {
  std::vector<double> d(R * C);
  for (std::size_t r = 0; r < R; ++r) {
    double dot = 0;
    for (std::size_t c = 0; c < C; ++c) dot += t[0][r * C + c] * t[1][r * C + c];
    for (std::size_t c = 0; c < C; ++c) d[r * C + c] = t[0][r * C + c] * (t[1][r * C + c] - dot);
  }
  return {d};
}

// moe_permute: x, map -> y; moe_permute.grad: dy, map -> dx.
Outputs permute(std::size_t R, std::size_t C, const Tensors& t, bool grad) {
  const std::size_t T = R / kSuiteTopK;
  std::vector<double> out(grad ? T * C : R * C, 0.0);
  for (std::size_t tok = 0; tok < T; ++tok) {
    for (std::size_t j = 0; j < kSuiteTopK; ++j) {
      const std::size_t row = at(t[1], tok * kSuiteTopK + j);
      for (std::size_t c = 0; c < C; ++c) {
        if (grad) {
          out[tok * C + c] += t[0][row * C + c];
        } else {
          out[row * C + c] = t[0][tok * C + c];
        }
      }
    }
  }
  return {out};
}

Outputs unpermute(std::size_t R, std::size_t C, const Tensors& t) {
  const std::size_t T = R / kSuiteTopK;
  std::vector<double> out(T * C, 0.0);
  for (std::size_t i = 0; i < R; ++i) {
    const std::size_t tok = i / kSuiteTopK, row = at(t[1], i);
    for (std::size_t c = 0; c < C; ++c) out[tok * C + c] += t[2][i] * t[0][row * C + c];
  }
  return {out};
}

// dout, y, map, probs -> dy, dprobs
Outputs unpermute_grad(std::size_t R, std::size_t C, const Tensors& t) {
  std::vector<double> dy(R * C), dprobs(R);
  for (std::size_t i = 0; i < R; ++i) {
    const std::size_t tok = i / kSuiteTopK, row = at(t[2], i);
    double dot = 0;
    for (std::size_t c = 0; c < C; ++c) {
      dy[row * C + c] = t[3][i] * t[0][tok * C + c];
      dot += t[0][tok * C + c] * t[1][row * C + c];
    }
    dprobs[i] = dot;
  }
  return {dy, dprobs};
}

Outputs cast(std::size_t R, std::size_t C, const Tensors& t) {
  std::vector<double> y(R * C);
  double amax = 0;
  for (std::size_t i = 0; i < R * C; ++i) {
    y[i] = round_to_e4m3(t[0][i]);
    amax = std::max(amax, std::abs(t[0][i]));
  }
  return {y, {amax}};
}

Outputs transpose(std::size_t R, std::size_t C, const Tensors& t) {
  std::vector<double> yt(R * C);
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t c = 0; c < C; ++c) yt[c * R + r] = t[0][r * C + c];
  }
  return {yt};
}

Outputs cast_transpose(std::size_t R, std::size_t C, const Tensors& t) {
  std::vector<double> y(R * C), yt(R * C);
  double amax = 0;
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t c = 0; c < C; ++c) {
      const double x = t[0][r * C + c];
      y[r * C + c] = yt[c * R + r] = round_to_e4m3(x);
      amax = std::max(amax, std::abs(x));
    }
  }
  return {y, yt, {amax}};
}

}  // namespace

double round_to_e4m3(double x) {
  if (std::isnan(x)) return x;
  constexpr double kMax = 448.0;  // 1.75 x 2^8
  const double a = std::abs(x);
  if (a == 0) return x;
  int e = 0;
  std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  // Three mantissa bits; below the smallest normal (2^-6) the subnormals' step of 2^-9.
  const double step = std::ldexp(1.0, std::max(e - 1, -6) - 3);
  const double q = std::min(std::nearbyint(a / step) * step, kMax);
  return std::copysign(q, x);
}

std::vector<std::size_t> top_k(const std::vector<double>& row, std::size_t k) {
  std::vector<std::size_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  k = std::min(k, row.size());
  std::partial_sort(
      idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
      [&](std::size_t a, std::size_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  idx.resize(k);
  return idx;
}

std::optional<std::vector<std::vector<double>>> routing_reference(
    const std::string& op, std::size_t rows, std::size_t cols,
    const std::vector<std::vector<float>>& tensors) {
  using Reference = Outputs (*)(std::size_t, std::size_t, const Tensors&);
  static const std::map<std::string_view, Reference> references = {
      {"moe_router", router},
      {"moe_router.grad", router_grad},
      {"moe_permute",
       [](std::size_t R, std::size_t C, const Tensors& t) { return permute(R, C, t, false); }},
      {"moe_permute.grad",
       [](std::size_t R, std::size_t C, const Tensors& t) { return permute(R, C, t, true); }},
      {"moe_unpermute", unpermute},
      {"moe_unpermute.grad", unpermute_grad},
      {"fp8_cast", cast},
      {"fp8_transpose", transpose},
      {"fp8_cast_transpose", cast_transpose}};
  // Any other op is not one of these: say so before widening its tensors.
  const auto it = references.find(op);
  if (it == references.end()) return std::nullopt;
  Tensors t;
  for (const auto& v : tensors) t.emplace_back(v.begin(), v.end());
  return it->second(rows, cols, t);
}

}  // namespace trainsim::kernels
