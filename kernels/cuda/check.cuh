#pragma once
// Every CUDA, cuBLASLt and cuDNN call is checked; a failure throws with the call and its place.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace trainsim::kernels {

/// Throws "kernels/cuda/x.cu:LINE: call: what" (the path from the repository's kernels/, so that
/// no build machine's directories reach a database's notes).
[[noreturn]] inline void gpu_fail(const char* call, const char* file, int line,
                                  const std::string& what) {
  std::string where(file);
  if (const auto at = where.rfind("kernels/"); at != std::string::npos) where = where.substr(at);
  throw std::runtime_error(where + ":" + std::to_string(line) + ": " + call + ": " + what);
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
