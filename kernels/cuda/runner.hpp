#pragma once
// One kernel of the suite, ready to time: inputs allocated (rotated through more memory than
// L2) and filled with random values, checked against a reference, then launched again and again.
// Plain C++: the suite's driver is compiled by the host compiler.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "sim/platform/kernel_shape.hpp"

namespace trainsim::kernels {

struct RunnerContext {
  cudaStream_t stream = nullptr;
  double l2_bytes = 50.0 * 1024 * 1024;
  double budget_bytes = 0;   // device memory a runner may take for rotated inputs
  void* cublaslt = nullptr;  // cublasLtHandle_t
  void* cudnn = nullptr;     // cudnnHandle_t
};

class KernelRunner {
 public:
  virtual ~KernelRunner() = default;
  /// Compares the kernel's output with a reference (on random inputs, outputs poisoned first);
  /// throws std::runtime_error with the error found when it is wrong.
  virtual void check() = 0;
  /// Launches the kernel once on the context's stream, on input set `iteration % sets`.
  virtual void launch(int iteration) = 0;
  virtual int sets() const = 0;
  /// What runs the kernel, for the database entry's `source` (e.g. "cublaslt").
  virtual std::string source() const = 0;
};

/// nullptr when the suite has no kernel for this shape.
std::unique_ptr<KernelRunner> make_memory_runner(const MemoryShape& shape, const RunnerContext& c);
std::unique_ptr<KernelRunner> make_gemm_runner(const GemmShape& shape, const RunnerContext& c);
/// Throws std::runtime_error when cuDNN has no engine for the attention graph.
std::unique_ptr<KernelRunner> make_attention_runner(const AttentionShape& shape,
                                                    const RunnerContext& c);

/// Elapsed device time of one launch between two CUDA events, in seconds.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t stream);
  double stop(cudaStream_t stream);

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace trainsim::kernels
