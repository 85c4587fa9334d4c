#pragma once
// Kernel-timing database (platforms/<gpu>/kernels*.json): measured (or published) times of
// kernels by op and shape, and the lookup the cost model uses before it falls back to the
// roofline.
//
// Lookup of a shape:
//  1. exact: an entry with the same op and shape (attention: also the same pass and GQA).
//  2. interpolation inside the shape's family (same op, element type and discrete attributes;
//     see family_key()) between measured shapes that bracket the query on every axis (GEMM: m,
//     n, k; attention: batch x heads, sequence; memory-bound: rows x cols, i.e. bytes). The
//     brackets are searched in log space over all the measured values, tightest cell first
//     (smallest log volume; each cell made only when the search reaches it), until a cell with
//     all its corners measured is found (at most 16,384 cells tried). Inside the cell
//     the time is multilinear in each axis' share of the FLOPs (bytes): along one axis, linear
//     in FLOPs (bytes), which is exact for a kernel that runs at a constant rate after a fixed
//     launch cost. (Log time linear in log FLOPs misses such a kernel by up to 1.5 % between
//     points a factor 2 apart, 6 % between points a factor 4 apart.)
//  3. nearest (measured databases): where no cell tried has all its corners measured (the grid
//     is not a full product of its axes' values), or the query lies above the measured range on
//     some axis, the rate (FLOP/s; bytes/s for memory-bound ops) of the nearest measured shape
//     in log distance summed over the axes, applied to the query's FLOPs (bytes): a measured
//     rate of a neighbouring shape knows the op's efficiency, the roofline only the best one.
//  4. shorter attention (measured databases): flash attention shorter than every measured
//     sequence of its family is scaled from the shortest by the tiles it runs
//     (short_attention.hpp); reported as nearest, a neighbour's time scaled.
//  5. nothing: a query below the measured range on any other axis (a kernel smaller than any
//     measured runs at an unknown fraction of its neighbour's rate), or any miss in a published
//     database; the caller uses the roofline.
// A published database holds rows of published benchmarks. Its attention rows (FlashAttention's
// fwd+bwd figure) are used as a rate per (head size, mask, sequence) for the forward and the
// backward kernel alike, whatever the batch, heads and GQA: the figure does not split the
// passes, and it was taken at one batch x heads per sequence length. Between its sequence
// lengths the rate is interpolated linearly in log sequence length.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/platform/kernel_shape.hpp"
#include "sim/platform/time_spread.hpp"

namespace trainsim {

enum class KernelDbKind { kMeasured, kPublished };
const char* to_string(KernelDbKind kind);

struct KernelDbEntry {
  KernelShape shape;
  double median_s = 0;
  std::optional<double> p10_s;
  std::optional<double> p90_s;
  std::optional<std::int64_t> repetitions;
  std::string source;  // published: the reference file and row it was built from
  /// p10_s and p90_s over the median; 1 where the entry gives none.
  TimeSpread spread() const;
};

/// Where and how the times were taken. Measured databases carry all of it; a published one only
/// the GPU's name.
struct KernelDbMeta {
  std::string gpu_name;
  std::optional<std::int64_t> sm_count;
  std::optional<double> sm_clock_MHz;
  std::optional<double> memory_clock_MHz;
  std::optional<double> l2_MiB;
  std::string driver;        // e.g. "580.82.07"
  std::string cuda_runtime;  // e.g. "13.0"
  std::string cublaslt;      // library versions
  std::string cudnn;
  std::string date;  // ISO 8601, UTC
  std::string suite_version;
  std::string method;               // how the times were taken (warm-up, repetitions, buffers)
  std::optional<double> copy_GBps;  // ceiling: device-to-device copy bandwidth
  std::optional<double> gemm_bf16_tflops;  // ceiling: best BF16 GEMM rate
  std::optional<double> gemm_fp8_tflops;   // ceiling: best FP8 GEMM rate
  std::vector<std::string> notes;
};

/// How a lookup found its time (published databases: exact or interpolated).
enum class KernelDbMatch { kExact, kInterpolated, kNearest };

struct KernelDbHit {
  double seconds = 0;
  KernelDbMatch match = KernelDbMatch::kInterpolated;
  /// The measured spread: the entry's (exact), its corners' with the interpolation's weights
  /// (interpolated), the nearest entry's (nearest).
  TimeSpread spread;
};

class KernelDatabase {
 public:
  KernelDatabase() = default;
  KernelDatabase(KernelDbKind kind, KernelDbMeta meta, std::vector<KernelDbEntry> entries);

  KernelDbKind kind() const { return kind_; }
  const KernelDbMeta& meta() const { return meta_; }
  const std::vector<KernelDbEntry>& entries() const& { return entries_; }
  // A temporary database's entries by value (for (e : load_kernel_database(f).entries())).
  std::vector<KernelDbEntry> entries() && { return std::move(entries_); }

  /// The time of `shape`, or nothing when the database neither holds nor brackets it.
  std::optional<KernelDbHit> lookup(const KernelShape& shape) const;

  /// Interpolation family of a shape in this database (op, element type, discrete attributes).
  std::string family_key(const KernelShape& shape) const;

 private:
  std::optional<KernelDbHit> exact(const KernelShape& shape) const;
  std::optional<KernelDbHit> interpolate(const KernelShape& shape) const;
  std::optional<KernelDbHit> nearest(const KernelShape& shape) const;
  std::optional<KernelDbHit> shorter_attention(const KernelShape& shape) const;  // step 4

  KernelDbKind kind_ = KernelDbKind::kMeasured;
  KernelDbMeta meta_;
  std::vector<KernelDbEntry> entries_;
  std::unordered_map<std::string, std::size_t> exact_;      // exact key -> entry
  std::map<std::string, std::vector<std::size_t>> family_;  // family key -> entries
  /// A family's entries by their coordinates on its interpolation axes (in entry order), and
  /// the distinct measured values on each axis, ascending.
  struct FamilyPoints {
    std::map<std::array<double, 3>, std::vector<std::size_t>> by_coords;
    std::array<std::vector<double>, 3> axis_values;
  };
  std::map<std::string, FamilyPoints> family_points_;
  void index_points();
  struct Memo {
    std::mutex mutex;
    std::unordered_map<std::string, std::optional<KernelDbHit>> hits;
  };
  std::shared_ptr<Memo> memo_ = std::make_shared<Memo>();  // interpolations made so far
};

/// Exact-match key of a shape (every field).
std::string exact_key(const KernelShape& shape);

/// A shape's keys in a database entry (op, dtype, m, n, k, ...).
nlohmann::ordered_json kernel_shape_json(const KernelShape& shape);

/// Strict reading: unknown keys, duplicate shapes and bad values are InputErrors naming the
/// file and JSON path.
KernelDatabase parse_kernel_database_json(const nlohmann::json& j, const std::string& file);
KernelDatabase load_kernel_database(const std::filesystem::path& path);
/// load_kernel_database() once per file and process while the file is unchanged (its size and
/// modification time): list, compare and sweep resolve the same platform many times, and a
/// database is never changed once read.
std::shared_ptr<const KernelDatabase> shared_kernel_database(const std::filesystem::path& path);
/// The file format parse_kernel_database_json() reads, entries in the order given.
std::string kernel_database_json(const KernelDatabase& db);

}  // namespace trainsim
