#pragma once
// The device: what it is (for the database's metadata), memory that frees itself, and random
// fills (never zeros: they hide unwritten outputs and can run faster than real data).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace trainsim::kernels {

struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  double sm_clock_MHz = 0;      // peak
  double memory_clock_MHz = 0;  // peak
  double l2_bytes = 0;
  double memory_bytes = 0;
  std::string driver;        // kernel driver version, or the driver's CUDA version
  std::string cuda_runtime;  // e.g. "13.0"
  std::string cublaslt;
  std::string cudnn;
};

DeviceInfo query_device();

enum class Elem { kBF16, kFP8, kF32, kI32 };
std::size_t elem_size(Elem e);

/// cudaMalloc'd memory, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Uniform values in [-scale, scale) (integers in [0, int_range) for kI32), from `seed`.
void fill_random(void* ptr, std::size_t count, Elem elem, std::uint64_t seed, float scale,
                 std::int32_t int_range = 1, cudaStream_t stream = nullptr);
/// Replaces each of `count` fp32 values by its absolute value.
void make_non_negative_f32(void* ptr, std::size_t count, cudaStream_t stream = nullptr);
/// A permutation of [0, count) into `count` int32 values (a routing map: every row once).
void fill_permutation(void* ptr, std::size_t count, std::uint64_t seed,
                      cudaStream_t stream = nullptr);
/// A poison value (NaN, or -1 for integers) so that unwritten outputs are caught.
void fill_poison(void* ptr, std::size_t count, Elem elem, cudaStream_t stream = nullptr);
/// How many of `count` BF16 values are NaN or infinite (poisoned outputs left unwritten).
std::size_t count_nonfinite_bf16(const void* ptr, std::size_t count, cudaStream_t stream = nullptr);
/// Keeps the stream busy for `seconds` (one thread reading the global timer), so that the host
/// can enqueue a timed launch before the GPU reaches it: the timing then holds no host time.
void gpu_spin(cudaStream_t stream, double seconds);

/// Device values as floats on the host.
void copy_to_host_as_float(const void* ptr, std::size_t count, Elem elem, float* out);

}  // namespace trainsim::kernels
