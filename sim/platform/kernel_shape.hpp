#pragma once
// The shape of one kernel launch, as the cost model produces it and the kernel-timing database
// stores it: a GEMM's m, n, k and element type; an attention kernel's batch, sequence, heads,
// head size, mask and pass; a memory-bound op's name and its rows x cols. FLOPs and bytes are
// functions of the shape, so the simulator and the microbenchmark suite count them alike.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace trainsim {

enum class DType { kBF16, kFP8 };
const char* to_string(DType dtype);
std::optional<DType> parse_dtype(std::string_view s);

/// How a GEMM's operands lie in memory (row-major, as a framework holds them), named as
/// cuBLAS names the product of their column-major views:
///   tn: C = A W^T, A [m x k], W [n x k]: a linear layer's forward (and every FP8 GEMM on Hopper,
///       which Transformer Engine first transposes to this layout);
///   nn: C = A B, A [m x k], B [k x n]: the data gradient dX = dY W;
///   nt: C = A^T B, A [k x m], B [k x n]: the weight gradient dW = dY^T X.
enum class GemmLayout { kTN, kNN, kNT };
const char* to_string(GemmLayout layout);
std::optional<GemmLayout> parse_gemm_layout(std::string_view s);

/// C[m x n] = A[m x k] B[k x n]: 2mnk FLOPs; reads A and B, writes C (2 bytes per element,
/// also for FP8, as the cost model has always counted). With `groups` > 1, a grouped GEMM: that
/// many independent products of the same m, n, k in one launch (an MoE layer's experts, each
/// with m tokens routed to it), op "grouped_gemm", `groups` times the FLOPs and bytes. With
/// `accumulate`, the product is added into an FP32 C in the epilogue (D = C + A B, C read and
/// D written in FP32, 8 bytes per element of C instead of 2): a weight gradient under
/// Megatron-LM's gradient-accumulation fusion, which adds it into the FP32 main gradient.
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  DType dtype = DType::kBF16;
  std::int64_t groups = 1;
  GemmLayout layout = GemmLayout::kTN;
  bool accumulate = false;
  bool operator==(const GemmShape&) const = default;
};

enum class AttentionPass { kForward, kBackward, kForwardBackward };
const char* to_string(AttentionPass pass);  // fwd, bwd, fwd+bwd
std::optional<AttentionPass> parse_attention_pass(std::string_view s);

/// Fused (flash) attention over `batch` sequences of `seq` tokens, `heads` query heads and
/// `kv_heads` key/value heads of `head_dim` each. FLOPs follow FlashAttention's benchmark
/// convention: forward 4 b s^2 heads d, halved when causal; backward 2.5x, both 3.5x.
struct AttentionShape {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  bool causal = true;
  AttentionPass pass = AttentionPass::kForward;
  DType dtype = DType::kBF16;
  bool operator==(const AttentionShape&) const = default;
};

/// A memory-bound op over `rows` x `cols` BF16 elements (rows = 1 for the optimizer's flat
/// parameter buffers). Its bytes are a fixed number per element, per op (memory_ops()).
struct MemoryShape {
  std::string op;
  std::int64_t rows = 1;
  std::int64_t cols = 0;
  bool operator==(const MemoryShape&) const = default;
};

using KernelShape = std::variant<GemmShape, AttentionShape, MemoryShape>;

/// Experts each token is routed to in the CUDA suite's permutation kernels (DeepSeek-V3's and
/// Qwen3-MoE's top-k): their bytes per routed element below are at this top-k.
inline constexpr int kSuiteTopK = 8;

/// A memory-bound op and the bytes it moves per element of its rows x cols.
struct MemoryOp {
  std::string_view name;
  double bytes_per_element;
  std::string_view what;
  /// The CUDA suite (kernels/) has a kernel for it and measures it; false: roofline-timed until
  /// one is written.
  bool in_suite = true;
  /// Row widths the suite measures it at (a router's columns are its experts).
  std::vector<std::int64_t> grid_cols = {4096};
  /// Its kernel takes rows in multiples of this (whole tokens of kSuiteTopK routed rows).
  std::int64_t row_multiple = 1;
  /// Its time per byte depends on the row width (a router's top-k passes over its experts run
  /// one after another: 12 times the bytes per second at 256 experts as at 8 on an H100), so a
  /// database interpolates it in rows and width, not in bytes alone.
  bool width_is_an_axis = false;
};
/// Every memory-bound op the cost model uses (and "copy", the bandwidth ceiling).
const std::vector<MemoryOp>& memory_ops();
const MemoryOp* find_memory_op(std::string_view name);

/// "gemm", "grouped_gemm", "attention" (any pass), or the memory-bound op's name.
std::string op_name(const KernelShape& shape);
/// Whether the shape is a GEMM (plain or grouped) on FP8 operands.
bool is_fp8_gemm(const KernelShape& shape);
double shape_flops(const KernelShape& shape);
/// Bytes moved through device memory (the cost model's count); 0 for an unknown memory op.
double shape_bytes(const KernelShape& shape);
/// One line: "gemm bf16 m=8192 n=3072 k=4096", "gemm bf16 nn m=8192 n=4096 k=3072" (a layout
/// other than tn is named), "gemm bf16 acc m=4096 n=8192 k=2048" (accumulated into FP32),
/// "grouped_gemm fp8 g=8 m=2048 n=28672 k=4096",
/// "attention fwd bf16 b=1 s=8192 h=16 kv=2 d=128 causal", "rmsnorm rows=8192 cols=8192".
std::string shape_label(const KernelShape& shape);

}  // namespace trainsim
