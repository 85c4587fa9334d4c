#include "kernels/suite/suite.hpp"

#include <benchmark/benchmark.h>
#include <cublasLt.h>
#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/runner.hpp"
#include "kernels/host/database.hpp"
#include "sim/core/catalog.hpp"
#include "sim/core/files.hpp"
#include "sim/core/version.hpp"

namespace trainsim::kernels {

namespace {

// Set by SIGINT and SIGTERM: the shapes not yet started are skipped and what was measured is
// written.
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) {
  g_stop = true;
}

// Each timed launch is queued behind this much GPU work, longer than the host takes to enqueue
// a launch, so that the event pair around it holds the kernel's time and no host time.
constexpr double kSpinSeconds = 50e-6;

using Clock = std::chrono::steady_clock;

// The off-grid shapes are always the same ones (their measurements are committed).
constexpr std::uint64_t kOffgridSeed = 20261123;

std::unique_ptr<KernelRunner> make_runner(const KernelShape& s, const RunnerContext& ctx) {
  if (const auto* g = std::get_if<GemmShape>(&s)) return make_gemm_runner(*g, ctx);
  if (const auto* a = std::get_if<AttentionShape>(&s)) return make_attention_runner(*a, ctx);
  return make_memory_runner(std::get<MemoryShape>(s), ctx);
}

// What a correctness check covers: the kernel (op, element type, head size, mask and GQA ratio);
// its launch logic is the same at every size. Every GEMM shape is checked (each may get another
// algorithm).
std::string check_key(const KernelShape& s) {
  if (std::holds_alternative<GemmShape>(s)) return shape_label(s);
  if (const auto* a = std::get_if<AttentionShape>(&s)) {
    return "attention " + std::string(to_string(a->pass)) + " d" + std::to_string(a->head_dim) +
           " group " + std::to_string(a->heads / a->kv_heads) + (a->causal ? " causal" : " full");
  }
  const auto& m = std::get<MemoryShape>(s);
  return m.op + " cols " + std::to_string(std::min<std::int64_t>(m.cols, 2048));
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

KernelDbMeta run_meta(const DeviceInfo& info, const SuiteRun& run) {
  KernelDbMeta meta;
  meta.gpu_name = info.name;
  meta.sm_count = info.sm_count;
  meta.sm_clock_MHz = info.sm_clock_MHz;
  meta.memory_clock_MHz = info.memory_clock_MHz;
  meta.l2_MiB = info.l2_bytes / (1 << 20);
  meta.driver = info.driver;
  meta.cuda_runtime = info.cuda_runtime;
  meta.cublaslt = info.cublaslt;
  meta.cudnn = info.cudnn;
  meta.date = utc_now();
  meta.suite_version = std::string(version());
  meta.method =
      "trainsim_kernels: outputs checked against a reference before timing; " +
      std::to_string(run.warmup) + " warm-up launches, then " +
      std::to_string(run.min_repetitions) + " to " + std::to_string(run.repetitions) +
      " timed (about " + std::to_string(static_cast<int>(run.time_per_shape * 1000)) +
      " ms per shape), one CUDA event pair per launch, each launch queued behind a 50 us GPU "
      "spin so that no host time is counted; inputs rotated over more than 2x L2 where memory "
      "allows";
  meta.notes = {
      "gemm: cuBLASLt, TN layout, FP32 accumulation, BF16 output, first heuristic algorithm; "
      "fp8: E4M3 inputs with per-tensor scales, no fast accumulation (Transformer Engine's "
      "data- and weight-gradient GEMMs)",
      "grouped_gemm: one cuBLASLt strided-batched launch over the groups (equal tokens per "
      "expert, as balanced routing gives)",
      "attention fwd (source cudnn-graph): cuDNN SDPA as a backend operation graph; "
      "kernels/torch/attention.py entries name their own source",
      "memory-bound ops: the suite's own kernels (kernels/cuda/memory_kernels.cu)"};
  return meta;
}

// One shape: build, check (once per check_key), warm up, then time the launches. Empty when the
// suite has no kernel for the shape (the attention backward: kernels/torch/attention.py).
std::vector<double> time_shape(const KernelShape& shape, const RunnerContext& ctx,
                               const SuiteRun& run, std::set<std::string>& checked,
                               std::string& source) {
  std::unique_ptr<KernelRunner> runner = make_runner(shape, ctx);
  if (!runner) return {};
  source = runner->source();
  if (checked.insert(check_key(shape)).second) runner->check();  // throws: the key stays failed
  EventTimer timer;
  double estimate = 0;
  int it = 0;
  for (; it < run.warmup; ++it) {
    gpu_spin(ctx.stream, kSpinSeconds);
    timer.start(ctx.stream);
    runner->launch(it);
    estimate = timer.stop(ctx.stream);
  }
  const int reps = repetitions_for(run, estimate);
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(reps));
  for (int r = 0; r < reps; ++r) {
    gpu_spin(ctx.stream, kSpinSeconds);
    timer.start(ctx.stream);
    runner->launch(it++);
    out.push_back(timer.stop(ctx.stream));
  }
  return out;
}

struct Handles {
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
  Handles() {
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasLtCreate");
    if (cudnnCreate(&dnn) != CUDNN_STATUS_SUCCESS) throw std::runtime_error("cudnnCreate");
  }
  ~Handles() {
    cudnnDestroy(dnn);
    cublasLtDestroy(lt);
  }
  Handles(const Handles&) = delete;
  Handles& operator=(const Handles&) = delete;
};

// The GPU a run measures: what it is, a stream, the libraries' handles, and the runners'
// context (L2 size, a quarter of the free memory for rotated inputs).
struct Device {
  DeviceInfo info;
  RunnerContext ctx;
  Handles handles;
  Device() {
    TS_CUDA(cudaSetDevice(0));
    info = query_device();
    TS_CUDA(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
    ctx.cublaslt = handles.lt;
    ctx.cudnn = handles.dnn;
    ctx.l2_bytes = info.l2_bytes;
    std::size_t free_bytes = 0, total_bytes = 0;
    TS_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    ctx.budget_bytes = 0.25 * static_cast<double>(free_bytes);
  }
  ~Device() { cudaStreamDestroy(ctx.stream); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One run: a Google Benchmark per shape not kept from a resumed run, the results, and the
// database written as they come.
class Session {
 public:
  Session(const SuiteRun& run, const std::vector<KernelShape>& shapes, Device& device)
      : run_(run), shapes_(shapes), device_(device), meta_(run_meta(device.info, run)) {
    if (run.resume && !run.out.empty() && std::filesystem::exists(run.out)) {
      const KernelDatabase resumed = load_kernel_database(run.out);
      results_.kept = kept_entries(resumed);
      meta_ = resumed_meta(resumed.meta(), meta_);
    }
  }

  void register_benchmarks() {
    for (const auto& shape : shapes_) {
      const std::string label = shape_label(shape);
      if (results_.kept.count(label) != 0) continue;  // measured by the run being resumed
      benchmark::RegisterBenchmark(
          label.c_str(), [this, shape, label](benchmark::State& st) { bench(shape, label, st); })
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMicrosecond);
    }
  }

  // Writes the database and says what was done; the exit code.
  int finish() {
    write();
    std::cerr << "trainsim_kernels: " << results_.samples.size() << " of " << shapes_.size()
              << " shapes timed (" << results_.kept.size() << " kept from the run resumed), "
              << results_.failures.size() << " failed their check, " << skipped_
              << " not timed (no kernel here, kernel failed its check, time budget or stop)"
              << (run_.out.empty() ? "" : "; wrote " + run_.out) << "\n";
    for (const auto& f : results_.failures) std::cerr << "  failed: " << f << "\n";
    return results_.failures.empty() ? 0 : 1;
  }

 private:
  // Why a shape is not started, or nothing.
  const char* not_started(const KernelShape& shape) const {
    if (g_stop) return "not timed: stopped";
    if (run_.time_budget > 0 && seconds_since(start_) > run_.time_budget) {
      return "not timed: time budget spent";
    }
    if (failed_keys_.count(check_key(shape)) != 0) return "not timed: its kernel failed its check";
    return nullptr;
  }

  void bench(const KernelShape& shape, const std::string& label, benchmark::State& st) {
    if (const char* why = not_started(shape)) {
      ++skipped_;
      st.SkipWithError(why);
      return;
    }
    std::vector<double> out;
    try {
      out = time_shape(shape, device_.ctx, run_, checked_, results_.sources[label]);
    } catch (const std::exception& e) {
      results_.failures.push_back(label + ": " + e.what());
      failed_keys_.insert(check_key(shape));
      st.SkipWithError(e.what());
      return;
    }
    if (out.empty()) {
      ++skipped_;
      st.SkipWithError("not timed: no kernel in this suite for the shape");
      return;
    }
    const Summary s = summarize(out);
    for (auto _ : st) st.SetIterationTime(s.median);
    results_.samples[label] = std::move(out);
    const double flops = shape_flops(shape), bytes = shape_bytes(shape);
    if (flops > 0) st.counters["TFLOP/s"] = flops / s.median / 1e12;
    st.counters["GB/s"] = bytes / s.median / 1e9;
    st.counters["launches"] = static_cast<double>(s.count);
    if (seconds_since(last_write_) > run_.checkpoint_seconds) write();
  }

  void write() {
    if (run_.out.empty()) return;
    write_file_atomically(run_.out, kernel_database_json(run_database(meta_, shapes_, results_)));
    last_write_ = Clock::now();
  }

  const SuiteRun& run_;
  const std::vector<KernelShape>& shapes_;
  Device& device_;
  KernelDbMeta meta_;
  RunResults results_;
  std::set<std::string> checked_, failed_keys_;
  std::size_t skipped_ = 0;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_write_ = start_;
};

void run_benchmarks(const SuiteRun& run) {
  std::vector<std::string> args = {"trainsim_kernels"};
  args.insert(args.end(), run.benchmark_args.begin(), run.benchmark_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}

}  // namespace

int run_suite(const SuiteRun& run) {
  std::vector<Model> models;
  const auto names = run.models.empty() ? catalog_names("models") : run.models;
  for (const auto& n : names) models.push_back(load_model(resolve_catalog_entry("models", n, n)));
  const auto shapes =
      selected_shapes(run, run.offgrid > 0 ? offgrid_shapes(run.shapes, run.offgrid, kOffgridSeed)
                                           : suite_shapes(models, run.shapes));
  if (run.list_only) {
    if (run.list_json) {
      std::cout << shapes_json(shapes);
      return 0;
    }
    for (const auto& s : shapes) std::cout << shape_label(s) << "\n";
    std::cout << shapes.size() << " shapes\n";
    return 0;
  }
  Device device;
  const DeviceInfo& info = device.info;
  std::cerr << "trainsim_kernels: " << info.name << ", " << info.sm_count << " SMs, "
            << info.sm_clock_MHz << " MHz, L2 " << info.l2_bytes / (1 << 20) << " MiB, driver "
            << info.driver << ", CUDA " << info.cuda_runtime << ", cuBLASLt " << info.cublaslt
            << ", cuDNN " << info.cudnn << "; " << shapes.size() << " shapes\n";
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  Session session(run, shapes, device);
  session.register_benchmarks();
  run_benchmarks(run);
  return session.finish();
}

}  // namespace trainsim::kernels
