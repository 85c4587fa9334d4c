// Simulation speed and memory at scale. SimGrid runs one simulation per process, so every
// iteration simulates in a forked child; the parent times it and reads the child's peak
// resident memory. Each case runs twice: the full replay (every GPU, the oracle) and the
// symmetric one `trainsim run` uses by default (a GPU per pipeline stage; the full replay where
// the layout does not allow it). results/scale.py times whole `trainsim run` commands instead.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "sim/engine/engine.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/graph/builder.hpp"
#include "sim/graph/symmetry.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

struct Scale {
  const char* model;
  Plan plan;
};

Plan plan_of(std::int64_t tp, std::int64_t pp, std::int64_t dp, std::int64_t gbs,
             std::int64_t seq) {
  Plan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.gbs = gbs;
  p.seq_len = seq;
  return p;
}

// scenarios/nemotron4-340b.json: interleaved with 96 virtual stages, every overlap on.
Plan nemotron_recipe() {
  Plan p = plan_of(8, 8, 4, 64, 4096);
  p.vp = 12;
  p.schedule = ScheduleKind::kInterleaved;
  p.sp = true;
  p.zero = 1;
  p.overlap_grad_reduce = true;
  p.overlap_param_gather = true;
  p.tp_comm_overlap = true;
  return p;
}

// The whole pipeline a `trainsim run` does after reading its inputs.
double simulate_once(const Scale& s, EngineKind engine, bool full) {
  const Model m = test::catalog_model(s.model);
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const Plan& p = s.plan;
  const auto part = build_partition(m, pf, p);
  const Topology topology(pf, p.world_size());
  const auto costs = compute_costs(m, pf, p, part);
  const auto replay = choose_replay(p, costs, topology, engine == EngineKind::kSimGrid, full);
  const auto graph = build_task_graph(p, costs, replay.replay, replay.chains);
  return simulate(graph, topology, engine).step_time_s;
}

void run_in_child(benchmark::State& state, const Scale& s, EngineKind engine, bool full) {
  long peak_kb = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    pid_t pid = ::fork();
    if (pid == 0) {
      const double step = simulate_once(s, engine, full);
      std::_Exit(step > 0 ? 0 : 1);
    }
    int status = 0;
    rusage usage{};
    ::wait4(pid, &status, 0, &usage);
    const auto end = std::chrono::steady_clock::now();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("simulation failed in the child process");
      return;
    }
    state.SetIterationTime(std::chrono::duration<double>(end - start).count());
    peak_kb = std::max(peak_kb, usage.ru_maxrss);
  }
  state.counters["gpus"] = static_cast<double>(s.plan.world_size());
  state.counters["peak_MB"] = static_cast<double>(peak_kb) / 1024.0;
}

// llama3.1-405b as Meta trained it on 16,384 H100s (tp 8, pp 16, dp 128, interleaved).
Plan llama405b_16k() {
  Plan p = plan_of(8, 16, 128, 2048, 8192);
  p.vp = 2;
  p.schedule = ScheduleKind::kInterleaved;
  p.sp = true;
  p.zero = 1;
  p.account_for_embedding_in_pipeline_split = true;
  p.account_for_loss_in_pipeline_split = true;
  return p;
}

const Scale kLlama70b1024{"llama3.1-70b", plan_of(8, 4, 32, 512, 8192)};
const Scale kLlama70b64{"llama3.1-70b", plan_of(4, 4, 4, 128, 8192)};
const Scale kNemotron256{"nemotron4-340b", nemotron_recipe()};
const Scale kLlama405b16k{"llama3.1-405b", llama405b_16k()};

constexpr bool kFull = true;
constexpr bool kSymmetric = false;

void BM_Llama70b_1024Gpus_SimGrid_Full(benchmark::State& st) {
  run_in_child(st, kLlama70b1024, EngineKind::kSimGrid, kFull);
}
void BM_Llama70b_1024Gpus_SimGrid_Symmetric(benchmark::State& st) {
  run_in_child(st, kLlama70b1024, EngineKind::kSimGrid, kSymmetric);
}
void BM_Llama70b_1024Gpus_Analytic_Full(benchmark::State& st) {
  run_in_child(st, kLlama70b1024, EngineKind::kAnalytic, kFull);
}
void BM_Llama70b_1024Gpus_Analytic_Symmetric(benchmark::State& st) {
  run_in_child(st, kLlama70b1024, EngineKind::kAnalytic, kSymmetric);
}
void BM_Llama70b_64Gpus_SimGrid_Full(benchmark::State& st) {
  run_in_child(st, kLlama70b64, EngineKind::kSimGrid, kFull);
}
void BM_Nemotron340b_256Gpus_Interleaved_SimGrid_Full(benchmark::State& st) {
  run_in_child(st, kNemotron256, EngineKind::kSimGrid, kFull);
}
void BM_Nemotron340b_256Gpus_Interleaved_SimGrid_Symmetric(benchmark::State& st) {
  run_in_child(st, kNemotron256, EngineKind::kSimGrid, kSymmetric);
}
void BM_Nemotron340b_256Gpus_Interleaved_Analytic_Full(benchmark::State& st) {
  run_in_child(st, kNemotron256, EngineKind::kAnalytic, kFull);
}
void BM_Llama405b_16384Gpus_Interleaved_SimGrid_Symmetric(benchmark::State& st) {
  run_in_child(st, kLlama405b16k, EngineKind::kSimGrid, kSymmetric);
}

#define TRAINSIM_BENCHMARK(name) \
  BENCHMARK(name)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5)
TRAINSIM_BENCHMARK(BM_Llama70b_1024Gpus_SimGrid_Full);
TRAINSIM_BENCHMARK(BM_Llama70b_1024Gpus_SimGrid_Symmetric);
TRAINSIM_BENCHMARK(BM_Llama70b_1024Gpus_Analytic_Full);
TRAINSIM_BENCHMARK(BM_Llama70b_1024Gpus_Analytic_Symmetric);
TRAINSIM_BENCHMARK(BM_Llama70b_64Gpus_SimGrid_Full);
TRAINSIM_BENCHMARK(BM_Nemotron340b_256Gpus_Interleaved_SimGrid_Full);
TRAINSIM_BENCHMARK(BM_Nemotron340b_256Gpus_Interleaved_SimGrid_Symmetric);
TRAINSIM_BENCHMARK(BM_Nemotron340b_256Gpus_Interleaved_Analytic_Full);
TRAINSIM_BENCHMARK(BM_Llama405b_16384Gpus_Interleaved_SimGrid_Symmetric);

}  // namespace
}  // namespace trainsim

BENCHMARK_MAIN();
