#pragma once
// Every CUDA, cuBLASLt and cuDNN call is checked; a failure throws with the call and its place.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace trainsim::kernels {

[[noreturn]] inline void gpu_fail(const char* call, const char* file, int line,
                                  const std::string& what) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                           what);
}

}  // namespace trainsim::kernels

#define TS_CUDA(call)                                                                        \
  do {                                                                                       \
    const cudaError_t ts_err_ = (call);                                                      \
    if (ts_err_ != cudaSuccess) {                                                            \
      ::trainsim::kernels::gpu_fail(#call, __FILE__, __LINE__, cudaGetErrorString(ts_err_)); \
    }                                                                                        \
  } while (0)

// After every kernel launch: the launch's own error.
#define TS_LAUNCHED() TS_CUDA(cudaGetLastError())
