#include "tests/support/support.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/platform/platform.hpp"

extern char** environ;

namespace trainsim::test {

std::string source_dir() {
  return TRAINSIM_SOURCE_DIR;
}
std::string data_path(const std::string& relative) {
  return source_dir() + "/tests/data/" + relative;
}

Model catalog_model(const std::string& name) {
  return load_model(source_dir() + "/models/" + name + ".json");
}

Model seed_model(const std::string& name) {
  return load_model(source_dir() + "/scenarios/seeds/models/" + name + ".json");
}

Platform catalog_platform(const std::string& name) {
  return load_platform(source_dir() + "/platforms/" + name + ".json");
}

std::string plan_error(const Plan& plan, const Model& model) {
  try {
    validate_plan(plan, model, catalog_platform("h100-sxm-ndr"), {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "(valid)";
}

KernelDbMeta synthetic_db_meta() {
  KernelDbMeta m;
  m.gpu_name = "test GPU";
  m.date = "2026-01-01T00:00:00Z";
  m.suite_version = "test";
  m.driver = "0";
  m.cuda_runtime = "0";
  m.method = "synthetic";
  return m;
}

KernelDbEntry db_entry(KernelShape shape, double seconds) {
  KernelDbEntry e;
  e.shape = std::move(shape);
  e.median_s = seconds;
  return e;
}

Partition uniform_partition(const Model& model, std::int64_t pp) {
  Plan plan;
  plan.pp = pp;
  return megatron_uniform_partition(model, plan, {});
}

std::vector<std::int64_t> stages_without_parameters(const Partition& p) {
  std::vector<std::int64_t> out;
  for (std::int64_t s = 0; s < p.num_stages(); ++s) {
    if (!p.has_parameters(s)) out.push_back(s);
  }
  return out;
}

Platform simple_platform(double nvlink_GBps, double nvlink_latency_us, double nic_GBps,
                         double nic_latency_us, std::int64_t nodes_per_leaf,
                         double oversubscription) {
  Platform p;
  p.name = "test";
  p.gpu.name = "test-gpu";
  p.gpu.peak_bf16_flops = 1e15;
  p.gpu.memory_bytes = 80.0 * (1ull << 30);
  p.gpu.hbm_bandwidth = 3e12;
  p.node.gpus_per_node = 8;
  p.node.nvlink_bandwidth = nvlink_GBps * 1e9;
  p.node.nvlink_latency = nvlink_latency_us * 1e-6;
  p.network.nics_per_node = 8;
  p.network.nic_bandwidth = nic_GBps * 1e9;
  p.network.nic_latency = nic_latency_us * 1e-6;
  p.network.nodes_per_leaf = nodes_per_leaf;
  p.network.leaf_oversubscription = oversubscription;
  p.network.spine_latency = 0;
  return p;
}

CostModel uniform_costs(std::int64_t stages, double t_forward, double t_backward, double t_weight) {
  CostModel cm;
  for (std::int64_t s = 0; s < stages; ++s) {
    StageCost sc;
    sc.forward.seconds = t_forward;
    sc.backward.seconds = t_backward;
    sc.backward_input.seconds = t_backward - t_weight;
    sc.backward_weight.seconds = t_weight;
    cm.stages.push_back(sc);
  }
  return cm;
}

TaskGraph transfers_graph(std::int64_t world, const std::vector<std::pair<int, int>>& pairs,
                          double bytes) {
  TaskGraph g;
  g.ranks.resize(static_cast<std::size_t>(world));
  std::vector<std::vector<Transfer>> sends(g.ranks.size());
  std::vector<std::vector<Transfer>> recvs(g.ranks.size());
  for (auto [src, dst] : pairs) {
    sends[static_cast<std::size_t>(src)].push_back({dst, 0, bytes});
    recvs[static_cast<std::size_t>(dst)].push_back({src, 0, bytes});
  }
  for (std::size_t r = 0; r < g.ranks.size(); ++r) {
    if (sends[r].empty() && recvs[r].empty()) continue;
    auto& prog = g.ranks[r];
    Op op;
    op.type = OpType::kP2P;
    op.comm = CommKind::kPP;
    op.num_sends = static_cast<std::uint16_t>(sends[r].size());
    op.num_recvs = static_cast<std::uint16_t>(recvs[r].size());
    prog.transfers = sends[r];
    prog.transfers.insert(prog.transfers.end(), recvs[r].begin(), recvs[r].end());
    prog.ops.push_back(op);
  }
  return g;
}

TaskGraph collective_graph(std::int64_t world, const std::vector<std::int32_t>& members,
                           CollectiveKind kind, double bytes, std::int32_t count) {
  TaskGraph g;
  g.ranks.resize(static_cast<std::size_t>(world));
  g.groups.push_back({Dim::kTP, members, {}});
  for (auto m : members) {
    Op op;
    op.type = OpType::kCollective;
    op.comm = CommKind::kTP;
    op.collective = kind;
    op.group = 0;
    op.bytes = bytes;
    op.count = count;
    g.ranks[static_cast<std::size_t>(m)].ops.push_back(op);
  }
  return g;
}

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Under AddressSanitizer, SimGrid's actor stack switches make ASan print a one-time warning
// (google/sanitizers#189) that is not trainsim's output; drop those three lines.
std::string without_asan_stack_warning(std::string err) {
  const std::string marker = "WARNING: ASan is ignoring requested __asan_handle_no_return";
  const auto at = err.find(marker);
  if (at == std::string::npos) return err;
  auto begin = err.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  auto end = begin;
  for (int line = 0; line < 3 && end != std::string::npos; ++line) {
    end = err.find('\n', end);
    if (end != std::string::npos) ++end;
  }
  err.erase(begin, end == std::string::npos ? std::string::npos : end - begin);
  return err;
}

}  // namespace

std::string make_temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "trainsim-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string& path) {
  return slurp(path);
}

RunningTrainsim start_trainsim(const std::vector<std::string>& args, const std::string& cwd) {
  char out_tmpl[] = "/tmp/trainsim-test-out-XXXXXX";
  char err_tmpl[] = "/tmp/trainsim-test-err-XXXXXX";
  int out_fd = ::mkstemp(out_tmpl);
  int err_fd = ::mkstemp(err_tmpl);
  if (out_fd < 0 || err_fd < 0) throw std::runtime_error("mkstemp failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<std::string> argv_s = {TRAINSIM_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_fd);
  ::close(err_fd);
  if (rc != 0) throw std::runtime_error("cannot start " + argv_s[0]);
  return {pid, out_tmpl, err_tmpl};
}

CommandResult RunningTrainsim::finish() {
  int status = 0;
  ::waitpid(pid, &status, 0);
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path.c_str());
  r.err = without_asan_stack_warning(slurp(err_path.c_str()));
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  return r;
}

CommandResult run_trainsim(const std::vector<std::string>& args, const std::string& cwd) {
  return start_trainsim(args, cwd).finish();
}

CommandResult run_trainsim_on_data(const std::string& data_dir,
                                   const std::vector<std::string>& args) {
  const char* set = std::getenv("TRAINSIM_DATA_DIR");
  const std::optional<std::string> saved = set ? std::optional<std::string>(set) : std::nullopt;
  ::setenv("TRAINSIM_DATA_DIR", data_dir.c_str(), 1);
  CommandResult r = run_trainsim(args);
  if (saved) {
    ::setenv("TRAINSIM_DATA_DIR", saved->c_str(), 1);
  } else {
    ::unsetenv("TRAINSIM_DATA_DIR");
  }
  return r;
}

nlohmann::json llama8b_report(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"run",  "--model",  "llama3.1-8b", "--platform", "h100-sxm-ndr",
                                   "--dp", "8",        "--gbs",       "8",          "--seq-len",
                                   "4096", "--engine", "analytic",    "--format",   "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CommandResult r = run_trainsim(args);
  if (r.exit_code != 0) {
    throw std::runtime_error("trainsim exited " + std::to_string(r.exit_code) + ": " + r.err);
  }
  return nlohmann::json::parse(r.out);
}

std::string default_scenario() {
  return source_dir() + "/scenarios/nemotron4-340b.json";
}

nlohmann::json default_scenario_report(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"run",      default_scenario(), "--engine",
                                   "analytic", "--format",         "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CommandResult r = run_trainsim(args);
  if (r.exit_code != 0) {
    throw std::runtime_error("trainsim exited " + std::to_string(r.exit_code) + ": " + r.err);
  }
  return nlohmann::json::parse(r.out);
}

}  // namespace trainsim::test
