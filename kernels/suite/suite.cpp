#include "kernels/suite/suite.hpp"

#include <benchmark/benchmark.h>
#include <cublasLt.h>
#include <cudnn.h>

#include <algorithm>
#include <ctime>
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

std::unique_ptr<KernelRunner> make_runner(const KernelShape& s, const RunnerContext& ctx) {
  if (const auto* g = std::get_if<GemmShape>(&s)) return make_gemm_runner(*g, ctx);
  if (const auto* a = std::get_if<AttentionShape>(&s)) return make_attention_runner(*a, ctx);
  return make_memory_runner(std::get<MemoryShape>(s), ctx);
}

// What a correctness check covers: the kernel (op, element type, head size and GQA ratio); its
// launch logic is the same at every size.
std::string check_key(const KernelShape& s) {
  if (std::holds_alternative<GemmShape>(s)) return shape_label(s);  // every GEMM shape
  if (const auto* a = std::get_if<AttentionShape>(&s)) {
    return "attention d" + std::to_string(a->head_dim) + " group " +
           std::to_string(a->heads / a->kv_heads);
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

}  // namespace

int run_suite(const SuiteRun& run) {
  std::vector<Model> models;
  const auto names = run.models.empty() ? catalog_names("models") : run.models;
  for (const auto& n : names) models.push_back(load_model(resolve_catalog_entry("models", n, n)));
  auto shapes = filter_ops(suite_shapes(models, run.shapes), run.ops);
  if (run.max_shapes > 0 && shapes.size() > run.max_shapes) shapes.resize(run.max_shapes);
  if (run.list_only) {
    for (const auto& s : shapes) std::cout << shape_label(s) << "\n";
    std::cout << shapes.size() << " shapes\n";
    return 0;
  }

  TS_CUDA(cudaSetDevice(0));
  const DeviceInfo info = query_device();
  RunnerContext ctx;
  TS_CUDA(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
  cublasLtHandle_t lt = nullptr;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasLtCreate failed");
  cudnnHandle_t dnn = nullptr;
  if (cudnnCreate(&dnn) != CUDNN_STATUS_SUCCESS) throw std::runtime_error("cudnnCreate failed");
  ctx.cublaslt = lt;
  ctx.cudnn = dnn;
  ctx.l2_bytes = info.l2_bytes;
  std::size_t free_bytes = 0, total_bytes = 0;
  TS_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  ctx.budget_bytes = 0.25 * static_cast<double>(free_bytes);
  std::cerr << "trainsim_kernels: " << info.name << ", " << info.sm_count << " SMs, "
            << info.sm_clock_MHz << " MHz, L2 " << info.l2_bytes / (1 << 20) << " MiB, driver "
            << info.driver << ", CUDA " << info.cuda_runtime << ", cuBLASLt " << info.cublaslt
            << ", cuDNN " << info.cudnn << "; " << shapes.size() << " shapes\n";

  std::map<std::string, std::vector<double>> samples;
  std::set<std::string> checked;
  int failures = 0;
  for (const auto& shape : shapes) {
    const std::string label = shape_label(shape);
    auto bench = [&, shape, label](benchmark::State& st) {
      std::unique_ptr<KernelRunner> runner;
      try {
        runner = make_runner(shape, ctx);
        if (!runner) {
          st.SkipWithError("no kernel in the suite for this shape");
          return;
        }
        if (checked.insert(check_key(shape)).second) runner->check();
        for (int i = 0; i < run.warmup; ++i) runner->launch(i);
        TS_CUDA(cudaStreamSynchronize(ctx.stream));
      } catch (const std::exception& e) {
        ++failures;
        st.SkipWithError(e.what());
        return;
      }
      EventTimer timer;
      int it = run.warmup;
      auto& out = samples[label];
      for (auto _ : st) {
        timer.start(ctx.stream);
        runner->launch(it++);
        const double s = timer.stop(ctx.stream);
        st.SetIterationTime(s);
        out.push_back(s);
      }
      const double flops = shape_flops(shape), bytes = shape_bytes(shape);
      std::vector<double> sorted = out;
      std::sort(sorted.begin(), sorted.end());
      const double median = sorted[sorted.size() / 2];
      if (flops > 0) st.counters["TFLOP/s"] = flops / median / 1e12;
      st.counters["GB/s"] = bytes / median / 1e9;
      st.counters["sets"] = runner->sets();
    };
    benchmark::RegisterBenchmark(label.c_str(), bench)
        ->UseManualTime()
        ->Iterations(run.repetitions)
        ->Unit(benchmark::kMicrosecond);
  }
  std::vector<std::string> args = {"trainsim_kernels"};
  args.insert(args.end(), run.benchmark_args.begin(), run.benchmark_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

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
  meta.method = "Google Benchmark, manual time: one CUDA event pair per launch; " +
                std::to_string(run.warmup) + " warm-up launches, " +
                std::to_string(run.repetitions) +
                " timed; inputs rotated over more than 2x L2 where memory allows; outputs checked "
                "against a reference before timing";
  std::vector<KernelDbEntry> entries;
  for (const auto& shape : shapes) {
    const auto it = samples.find(shape_label(shape));
    if (it == samples.end() || it->second.empty()) continue;
    entries.push_back(measured_entry(shape, it->second));
    const auto& e = entries.back();
    if (const auto* g = std::get_if<GemmShape>(&shape)) {
      auto& ceiling = g->dtype == DType::kFP8 ? meta.gemm_fp8_tflops : meta.gemm_bf16_tflops;
      const double tflops = shape_flops(shape) / e.median_s / 1e12;
      if (!ceiling || tflops > *ceiling) ceiling = tflops;
    } else if (const auto* m = std::get_if<MemoryShape>(&shape); m && m->op == "copy") {
      const double gbps = shape_bytes(shape) / e.median_s / 1e9;
      if (!meta.copy_GBps || gbps > *meta.copy_GBps) meta.copy_GBps = gbps;
    }
  }
  if (!run.out.empty()) {
    write_file_atomically(run.out, kernel_database_json(KernelDatabase(KernelDbKind::kMeasured,
                                                                       std::move(meta), entries)));
    std::cerr << "trainsim_kernels: wrote " << run.out << " (" << entries.size() << " of "
              << shapes.size() << " shapes)\n";
  }
  cudnnDestroy(dnn);
  cublasLtDestroy(lt);
  cudaStreamDestroy(ctx.stream);
  return failures > 0 ? 1 : 0;
}

}  // namespace trainsim::kernels
