#include "kernels/host/memory_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "kernels/host/op_math.hpp"
#include "kernels/host/routing_reference.hpp"

namespace trainsim::kernels {

namespace {

using Tensors = std::vector<std::vector<double>>;  // the tensors, widened
using Outputs = std::vector<std::vector<double>>;

// Mean and mean square of row r.
std::pair<double, double> row_stats(const std::vector<double>& x, std::size_t r, std::size_t C) {
  double s = 0, ss = 0;
  for (std::size_t c = 0; c < C; ++c) {
    s += x[r * C + c];
    ss += x[r * C + c] * x[r * C + c];
  }
  return {s / static_cast<double>(C), ss / static_cast<double>(C)};
}

// rmsnorm: x, w -> y; rmsnorm.grad: x, w, dy -> dx.
Outputs rmsnorm(std::size_t R, std::size_t C, const Tensors& t, bool grad) {
  std::vector<double> o(R * C);
  for (std::size_t r = 0; r < R; ++r) {
    const double rs = 1.0 / std::sqrt(row_stats(t[0], r, C).second + static_cast<double>(kNormEps));
    double dot = 0;
    if (grad) {
      for (std::size_t c = 0; c < C; ++c) dot += t[0][r * C + c] * t[1][c] * t[2][r * C + c];
    }
    for (std::size_t c = 0; c < C; ++c) {
      const double x = t[0][r * C + c], w = t[1][c];
      o[r * C + c] =
          grad ? rs * w * t[2][r * C + c] - dot * rs * rs * rs / static_cast<double>(C) * x
               : x * rs * w;
    }
  }
  return {o};
}

// layernorm: x, w, b -> y; layernorm.grad: x, w, dy -> dx.
Outputs layernorm(std::size_t R, std::size_t C, const Tensors& t, bool grad) {
  std::vector<double> o(R * C);
  for (std::size_t r = 0; r < R; ++r) {
    const auto [mean, sq] = row_stats(t[0], r, C);
    const double rstd =
        1.0 / std::sqrt(std::max(sq - mean * mean, 0.0) + static_cast<double>(kNormEps));
    double mg = 0, mgx = 0;
    if (grad) {
      for (std::size_t c = 0; c < C; ++c) {
        const double g = t[1][c] * t[2][r * C + c];
        mg += g;
        mgx += g * (t[0][r * C + c] - mean) * rstd;
      }
      mg /= static_cast<double>(C);
      mgx /= static_cast<double>(C);
    }
    for (std::size_t c = 0; c < C; ++c) {
      const double xh = (t[0][r * C + c] - mean) * rstd;
      o[r * C + c] =
          grad ? rstd * (t[1][c] * t[2][r * C + c] - mg - xh * mgx) : xh * t[1][c] + t[2][c];
    }
  }
  return {o};
}

// Pairs (x[2p], x[2p+1]) of row r rotated by r x 10000^(-2 (p mod 64) / 128); the gradient back.
Outputs rope(std::size_t R, std::size_t C, const Tensors& t, bool grad) {
  std::vector<double> o(R * C);
  const double sign = grad ? -1.0 : 1.0;
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t p = 0; p < C / 2; ++p) {
      const double a = sign * static_cast<double>(r) *
                       std::pow(10000.0, -2.0 * static_cast<double>(p % 64) / 128.0);
      const double x0 = t[0][r * C + 2 * p], x1 = t[0][r * C + 2 * p + 1];
      o[r * C + 2 * p] = x0 * std::cos(a) - x1 * std::sin(a);
      o[r * C + 2 * p + 1] = x0 * std::sin(a) + x1 * std::cos(a);
    }
  }
  return {o};
}

// Gated: in = [gate | up] per row -> act(gate) x up; the gradient: dout, in -> [dgate | dup].
Outputs gated_mlp(const std::string& op, std::size_t R, std::size_t C, const Tensors& t) {
  const Act a = act_of(op);
  const bool grad = is_grad(op);
  const auto& in = grad ? t[1] : t[0];
  std::vector<double> o(grad ? 2 * R * C : R * C);
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t c = 0; c < C; ++c) {
      const auto g = static_cast<float>(in[r * 2 * C + c]);
      const double u = in[r * 2 * C + C + c];
      if (grad) {
        const double d = t[0][r * C + c];
        o[r * 2 * C + c] = d * u * static_cast<double>(act_grad(a, g));
        o[r * 2 * C + C + c] = d * static_cast<double>(act(a, g));
      } else {
        o[r * C + c] = static_cast<double>(act(a, g)) * u;
      }
    }
  }
  return {o};
}

// act(x); the gradient: x, dy -> dy act'(x).
Outputs activation(const std::string& op, const Tensors& t) {
  const Act a = act_of(op);
  std::vector<double> o(t[0].size());
  for (std::size_t i = 0; i < o.size(); ++i) {
    const auto x = static_cast<float>(t[0][i]);
    o[i] = is_grad(op) ? t[1][i] * static_cast<double>(act_grad(a, x))
                       : static_cast<double>(act(a, x));
  }
  return {o};
}

// embedding: table, ids -> rows; embedding.grad: dy, ids, grad (fp32) -> grad + scattered dy.
Outputs embedding(std::size_t R, std::size_t C, const Tensors& t, bool grad) {
  std::vector<double> o = grad ? t[2] : std::vector<double>(R * C);
  for (std::size_t r = 0; r < R; ++r) {
    const auto id = static_cast<std::size_t>(t[1][r]);
    for (std::size_t c = 0; c < C; ++c) {
      if (grad) {
        o[id * C + c] += t[0][r * C + c];
      } else {
        o[r * C + c] = t[0][id * C + c];
      }
    }
  }
  return {o};
}

// logits, targets -> softmax, loss; the gradient: softmax, targets -> softmax - one-hot.
Outputs cross_entropy(std::size_t R, std::size_t C, const Tensors& t, bool grad) {
  if (grad) {
    std::vector<double> o = t[0];
    for (std::size_t r = 0; r < R; ++r) o[r * C + static_cast<std::size_t>(t[1][r])] -= 1.0;
    return {o};
  }
  std::vector<double> sm(R * C), loss(R);
  for (std::size_t r = 0; r < R; ++r) {
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (std::size_t c = 0; c < C; ++c) m = std::max(m, t[0][r * C + c]);
    for (std::size_t c = 0; c < C; ++c) s += std::exp(t[0][r * C + c] - m);
    for (std::size_t c = 0; c < C; ++c) sm[r * C + c] = std::exp(t[0][r * C + c] - m) / s;
    loss[r] = std::log(s) + m - t[0][r * C + static_cast<std::size_t>(t[1][r])];
  }
  return {sm, loss};
}

// grad, master, m, v -> master, m, v and the BF16 weight (the master's value).
Outputs adam(const Tensors& t) {
  const std::size_t N = t[0].size();
  std::vector<double> p(N), m(N), v(N);
  const AdamParams a;
  for (std::size_t i = 0; i < N; ++i) {
    auto pi = static_cast<float>(t[1][i]), mi = static_cast<float>(t[2][i]),
         vi = static_cast<float>(t[3][i]);
    adam_update(a, static_cast<float>(t[0][i]), pi, mi, vi);
    p[i] = static_cast<double>(pi);
    m[i] = static_cast<double>(mi);
    v[i] = static_cast<double>(vi);
  }
  return {p, m, v, p};
}

}  // namespace

std::vector<std::vector<double>> memory_reference(const std::string& op, std::size_t rows,
                                                  std::size_t cols, const HostTensors& tensors) {
  if (auto routing = routing_reference(op, rows, cols, tensors)) return std::move(*routing);
  Tensors t;
  for (const auto& v : tensors) t.emplace_back(v.begin(), v.end());
  const std::size_t R = rows, C = cols;
  const bool grad = is_grad(op);
  if (op == "copy" || op == "cast" || op == "cast.grad") return {t[0]};
  if (op == "add") {
    std::vector<double> o(R * C);
    for (std::size_t i = 0; i < o.size(); ++i) o[i] = t[0][i] + t[1][i];
    return {o};
  }
  if (op.rfind("rmsnorm", 0) == 0) return rmsnorm(R, C, t, grad);
  if (op.rfind("layernorm", 0) == 0) return layernorm(R, C, t, grad);
  if (op.rfind("rope", 0) == 0) return rope(R, C, t, grad);
  if (gated(op)) return gated_mlp(op, R, C, t);
  if (op.rfind("gelu", 0) == 0 || op.rfind("relu", 0) == 0 || op.rfind("squared_relu", 0) == 0) {
    return activation(op, t);
  }
  if (op.rfind("embedding", 0) == 0) return embedding(R, C, t, grad);
  if (op.rfind("cross_entropy", 0) == 0) return cross_entropy(R, C, t, grad);
  if (op == "grad_norm") {
    double s = 0;
    for (double g : t[0]) s += g * g;
    return {{s}};
  }
  if (op == "adam") return adam(t);
  return {};
}

}  // namespace trainsim::kernels
