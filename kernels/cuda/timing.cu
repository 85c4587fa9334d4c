#include "kernels/cuda/check.cuh"
#include "kernels/cuda/runner.hpp"

namespace trainsim::kernels {

EventTimer::EventTimer() {
  TS_CUDA(cudaEventCreate(&start_));
  TS_CUDA(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

void EventTimer::start(cudaStream_t stream) {
  TS_CUDA(cudaEventRecord(start_, stream));
}

double EventTimer::stop(cudaStream_t stream) {
  TS_CUDA(cudaEventRecord(stop_, stream));
  TS_CUDA(cudaEventSynchronize(stop_));
  float ms = 0;
  TS_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace trainsim::kernels
