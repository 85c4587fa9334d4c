#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cudnn.h>

#include <fstream>
#include <numeric>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"

namespace trainsim::kernels {

namespace {

__host__ __device__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

__global__ void fill_random_kernel(void* ptr, std::size_t count, Elem elem, std::uint64_t seed,
                                   float scale, std::int32_t int_range) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t r = splitmix64(seed ^ (i * 0x2545f4914f6cdd1dULL));
    const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    const float v = (2.0f * u - 1.0f) * scale;
    switch (elem) {
      case Elem::kBF16:
        static_cast<__nv_bfloat16*>(ptr)[i] = __float2bfloat16(v);
        break;
      case Elem::kFP8:
        static_cast<__nv_fp8_e4m3*>(ptr)[i] = __nv_fp8_e4m3(v);
        break;
      case Elem::kF32:
        static_cast<float*>(ptr)[i] = v;
        break;
      case Elem::kI32:
        static_cast<std::int32_t*>(ptr)[i] =
            static_cast<std::int32_t>(r % static_cast<std::uint64_t>(int_range));
        break;
    }
  }
}

__global__ void abs_kernel(float* p, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = fabsf(p[i]);
  }
}

// i -> (a i + b) mod count, a coprime to count: every value of [0, count) appears once.
__global__ void permutation_kernel(std::int32_t* p, std::size_t count, std::uint64_t a,
                                   std::uint64_t b) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = static_cast<std::int32_t>((a * i + b) % count);
  }
}

__global__ void fill_poison_kernel(void* ptr, std::size_t count, Elem elem) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    switch (elem) {
      case Elem::kBF16:
        static_cast<__nv_bfloat16*>(ptr)[i] = __float2bfloat16(__int_as_float(0x7fc00000));
        break;
      case Elem::kFP8:
        static_cast<unsigned char*>(ptr)[i] = 0x7f;  // e4m3 NaN
        break;
      case Elem::kF32:
        static_cast<float*>(ptr)[i] = __int_as_float(0x7fc00000);
        break;
      case Elem::kI32:
        static_cast<std::int32_t*>(ptr)[i] = -1;
        break;
    }
  }
}

__global__ void count_nonfinite_kernel(const __nv_bfloat16* p, std::size_t count,
                                       unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    local += isfinite(__bfloat162float(p[i])) ? 0ULL : 1ULL;
  }
  if (local > 0) atomicAdd(bad, local);
}

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

unsigned grid_for(std::size_t count) {
  const std::size_t blocks = (count + 255) / 256;
  return static_cast<unsigned>(blocks < 65536 ? (blocks == 0 ? 1 : blocks) : 65536);
}

std::string version_text(long v, long major_div, long minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string((v % major_div) / minor_div) + "." +
         std::to_string(v % minor_div);
}

}  // namespace

std::size_t elem_size(Elem e) {
  switch (e) {
    case Elem::kBF16:
      return 2;
    case Elem::kFP8:
      return 1;
    case Elem::kF32:
    case Elem::kI32:
      return 4;
  }
  return 0;
}

DeviceInfo query_device() {
  DeviceInfo d;
  int dev = 0;
  TS_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  TS_CUDA(cudaGetDeviceProperties(&prop, dev));
  d.name = prop.name;
  d.sm_count = prop.multiProcessorCount;
  d.l2_bytes = static_cast<double>(prop.l2CacheSize);
  d.memory_bytes = static_cast<double>(prop.totalGlobalMem);
  int khz = 0;
  TS_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
  d.sm_clock_MHz = khz / 1000.0;
  TS_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev));
  d.memory_clock_MHz = khz / 1000.0;
  int v = 0;
  TS_CUDA(cudaRuntimeGetVersion(&v));
  d.cuda_runtime = std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  TS_CUDA(cudaDriverGetVersion(&v));
  d.driver = "CUDA " + std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  // The kernel driver's own version, where Linux shows it: the first word of the first line
  // that looks like a version ("NVRM version: NVIDIA UNIX ... Kernel Module [for x86_64]
  // 580.159.04 ...").
  std::ifstream proc("/proc/driver/nvidia/version");
  std::string word;
  while (proc >> word) {
    if (word.find('.') != std::string::npos &&
        word.find_first_not_of("0123456789.") == std::string::npos) {
      d.driver = word + " (" + d.driver + ")";
      break;
    }
  }
  d.cublaslt = version_text(static_cast<long>(cublasLtGetVersion()), 10000, 100);
  d.cudnn = version_text(static_cast<long>(cudnnGetVersion()), 10000, 100);
  return d;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) TS_CUDA(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void fill_random(void* ptr, std::size_t count, Elem elem, std::uint64_t seed, float scale,
                 std::int32_t int_range, cudaStream_t stream) {
  fill_random_kernel<<<grid_for(count), 256, 0, stream>>>(ptr, count, elem, seed, scale, int_range);
  TS_LAUNCHED();
}

void gpu_spin(cudaStream_t stream, double seconds) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(seconds * 1e9));
  TS_LAUNCHED();
}

void make_non_negative_f32(void* ptr, std::size_t count, cudaStream_t stream) {
  abs_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<float*>(ptr), count);
  TS_LAUNCHED();
}

void fill_permutation(void* ptr, std::size_t count, std::uint64_t seed, cudaStream_t stream) {
  // The step near count / golden ratio, so that neighbouring entries land far apart.
  std::uint64_t a = static_cast<std::uint64_t>(static_cast<double>(count) * 0.6180339887) | 1;
  while (std::gcd(a, static_cast<std::uint64_t>(count)) != 1) ++a;
  permutation_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<std::int32_t*>(ptr), count, a,
                                                          seed % count);
  TS_LAUNCHED();
}

void fill_poison(void* ptr, std::size_t count, Elem elem, cudaStream_t stream) {
  fill_poison_kernel<<<grid_for(count), 256, 0, stream>>>(ptr, count, elem);
  TS_LAUNCHED();
}

std::size_t count_nonfinite_bf16(const void* ptr, std::size_t count, cudaStream_t stream) {
  DeviceBuffer bad(sizeof(unsigned long long));
  TS_CUDA(cudaMemsetAsync(bad.get(), 0, sizeof(unsigned long long), stream));
  count_nonfinite_kernel<<<grid_for(count), 256, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(ptr), count, static_cast<unsigned long long*>(bad.get()));
  TS_LAUNCHED();
  unsigned long long host = 0;
  TS_CUDA(cudaMemcpyAsync(&host, bad.get(), sizeof(host), cudaMemcpyDeviceToHost, stream));
  TS_CUDA(cudaStreamSynchronize(stream));
  return static_cast<std::size_t>(host);
}

void copy_to_host_as_float(const void* ptr, std::size_t count, Elem elem, float* out) {
  std::vector<unsigned char> raw(count * elem_size(elem));
  TS_CUDA(cudaMemcpy(raw.data(), ptr, raw.size(), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < count; ++i) {
    switch (elem) {
      case Elem::kBF16:
        out[i] = __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(raw.data())[i]);
        break;
      case Elem::kFP8:
        out[i] = static_cast<float>(reinterpret_cast<const __nv_fp8_e4m3*>(raw.data())[i]);
        break;
      case Elem::kF32:
        out[i] = reinterpret_cast<const float*>(raw.data())[i];
        break;
      case Elem::kI32:
        out[i] = static_cast<float>(reinterpret_cast<const std::int32_t*>(raw.data())[i]);
        break;
    }
  }
}

}  // namespace trainsim::kernels
