#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"
#include "sim/core/units.hpp"
#include "sim/platform/gpu_match.hpp"
#include "sim/platform/kernel_db.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

namespace {
constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kMicro = 1e-6;
// Physical bounds, far beyond any machine built either way: a value past them is a typo or a unit
// mistake, and would otherwise reach the engine as an absurd (or infinite) time (an NVLink of
// 1e-300 GB/s printed a step of 1e62 s; 2^62 nodes per leaf overflowed the topology).
const RealRange kEfficiency{0.01, true, 1.0, true};         // 1 % to 100 % of the sheet's peak
const RealRange kTflops{0.1, true, 1e5, true};              // 100 GFLOP/s to 100 PFLOP/s per GPU
const RealRange kGiBytes{0.0, false, 65536, true};          // 64 TiB per GPU
const RealRange kMiBytes{0.0, true, 65536 * 1024.0, true};  // overheads: at most 64 TiB
const RealRange kGiBytesOrNone{0.0, true, 65536, true};
const RealRange kGBps{0.1, true, 1e6, true};       // 100 MB/s to 1 PB/s
const RealRange kGbps{1.0, true, 1e6, true};       // 1 Gb/s to 1 Pb/s per NIC
const RealRange kLatencyUs{0.0, true, 1e6, true};  // one second
const IntRange kGpusPerNode{1, 4096};
const IntRange kNodesPerLeaf{1, std::int64_t{1} << 20};  // the most GPUs trainsim simulates

GpuSheet parse_gpu(JsonObject gpu) {
  GpuSheet g;
  g.name = gpu.string("name");
  auto peak = gpu.object("peak_dense_tflops");
  g.peak_bf16_flops = peak.number("bf16", kTflops) * kTera;
  g.peak_fp8_flops = peak.optional_number("fp8", kTflops).value_or(0.0) * kTera;
  peak.finish();
  g.memory_bytes = gpu.number("memory_GiB", kGiBytes) * kGiB;
  g.hbm_bandwidth = gpu.number("hbm_bandwidth_GBps", kGBps) * kGiga;
  gpu.finish();
  return g;
}

NodeSpec parse_node(JsonObject node) {
  NodeSpec n;
  n.gpus_per_node = node.integer("gpus_per_node", kGpusPerNode);
  n.nvlink_bandwidth = node.number("nvlink_bandwidth_GBps", kGBps) * kGiga;
  n.nvlink_latency = node.number("nvlink_latency_us", kLatencyUs) * kMicro;
  node.finish();
  return n;
}

NetworkSpec parse_network(JsonObject net, std::int64_t gpus_per_node) {
  NetworkSpec n;
  n.nics_per_node = net.integer("nics_per_node", kGpusPerNode);
  if (n.nics_per_node != gpus_per_node) {
    net.fail("nics_per_node", "must equal node.gpus_per_node (one NIC per GPU), got " +
                                  std::to_string(n.nics_per_node));
  }
  n.nic_bandwidth = net.number("nic_bandwidth_Gbps", kGbps) * kGiga / 8.0;
  n.nic_latency = net.number("nic_latency_us", kLatencyUs) * kMicro;
  n.nodes_per_leaf = net.integer("nodes_per_leaf", kNodesPerLeaf);
  n.leaf_oversubscription = net.number("leaf_oversubscription", {1.0, true, 1000.0, true});
  n.spine_latency = net.number("spine_latency_us", kLatencyUs) * kMicro;
  net.finish();
  return n;
}

Efficiency parse_efficiency(JsonObject eff) {
  Efficiency e;
  e.gemm = eff.number("gemm", kEfficiency);
  e.gemm_fp8 = eff.optional_number("gemm_fp8", kEfficiency).value_or(e.gemm);
  e.attention = eff.number("attention", kEfficiency);
  e.memory = eff.number("memory", kEfficiency);
  e.nvlink = eff.number("nvlink", kEfficiency);
  e.network = eff.number("network", kEfficiency);
  eff.finish();
  return e;
}

// Each key optional (neutral when absent); bounds are what a physical value can be.
Calibration parse_calibration(JsonObject cal) {
  Calibration c;
  auto value = [&](std::string_view key, RealRange range, double neutral) {
    return cal.optional_number(key, range).value_or(neutral);
  };
  c.sustained_compute = value("sustained_compute", {0.25, true, 1.0, true}, 1.0);
  c.sustained_fp8_gemm = value("sustained_fp8_gemm", {0.25, true, 1.0, true}, 1.0);
  c.gpu_speed_spread = value("gpu_speed_spread", {0.0, true, 0.2, true}, 0.0);
  c.band.p10 = value("residual_p10", {-0.5, true, 0.0, true}, 0.0);
  c.band.p90 = value("residual_p90", {0.0, true, 0.5, true}, 0.0);
  c.band.per_spread_p10 = value("residual_per_spread_p10", {-20.0, true, 0.0, true}, 0.0);
  c.band.per_spread_p90 = value("residual_per_spread_p90", {0.0, true, 20.0, true}, 0.0);
  cal.finish();
  return c;
}

// The kernel database named by the platform file, relative to that file.
void load_named_kernel_database(Platform& p, const JsonObject& o, const std::string& db,
                                const std::string& file) {
  const auto path = std::filesystem::path(file).parent_path() / db;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    o.fail("kernel_database", path.string() + " is a directory, not a JSON file");
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    o.fail("kernel_database", "no such file: " + path.string());
  }
  p.kernel_db = shared_kernel_database(path);
  if (auto mismatch = kernel_db_gpu_mismatch(p.gpu, *p.kernel_db)) {
    o.fail("kernel_database", path.string() + " " + *mismatch);
  }
  p.kernel_db_name = db;
  p.kernel_db_path = path;
}

// The optional sections after the required ones, in the file's order of reading.
void parse_optional_sections(Platform& p, JsonObject& o, const std::string& file) {
  if (auto overlap = o.optional_object("overlap")) {
    p.overlap.compute_slowdown =
        overlap->optional_number("compute_slowdown", {0.0, true, 1.0, false}).value_or(0.0);
    overlap->finish();
  }
  if (auto backends = o.optional_object("attention_backends")) {
    p.flash_attn2_time_factor =
        backends->optional_number("flash_attn2_time_factor", {1.0, true, 10.0, true});
    backends->finish();
  }
  if (auto cal = o.optional_object("calibration")) p.calibration = parse_calibration(*cal);
  if (auto db = o.optional_string("kernel_database")) {
    load_named_kernel_database(p, o, *db, file);
  }
  if (auto mem = o.optional_object("memory")) {
    p.memory.allocated = mem->number("allocated_overhead_MiB", kMiBytes) * kMiB;
    p.memory.reserved = mem->number("runtime_reserved_GiB", kGiBytesOrNone) * kGiB;
    p.memory.fragmentation = mem->number("fragmentation", {0.0, true, 1.0, true});
    p.memory.cublas_workspace =
        mem->optional_number("cublas_workspace_MiB", kMiBytes).value_or(0.0) * kMiB;
    mem->finish();
  }
  if (auto storage = o.optional_object("storage")) {
    p.storage.read_bandwidth = storage->number("read_bandwidth_GBps", kGBps) * kGiga;
    storage->finish();
  }
}

}  // namespace

Platform parse_platform_json(const nlohmann::json& j, const std::string& file) {
  JsonObject o(j, file);
  Platform p;
  p.name = o.string("name");
  p.description = o.optional_string("description").value_or("");
  p.gpu = parse_gpu(o.object("gpu"));
  p.node = parse_node(o.object("node"));
  p.network = parse_network(o.object("network"), p.node.gpus_per_node);
  p.efficiency = parse_efficiency(o.object("efficiency"));
  parse_optional_sections(p, o, file);
  o.allow({"sources", "notes"});
  o.finish();
  return p;
}

Platform load_platform(const std::filesystem::path& path) {
  return parse_platform_json(load_json_file(path), path.string());
}

}  // namespace trainsim
