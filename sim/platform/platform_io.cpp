#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"
#include "sim/platform/kernel_db.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

namespace {
constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
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
}  // namespace

Platform parse_platform_json(const nlohmann::json& j, const std::string& file) {
  JsonObject o(j, file);
  Platform p;
  p.name = o.string("name");
  p.description = o.optional_string("description").value_or("");

  auto gpu = o.object("gpu");
  p.gpu.name = gpu.string("name");
  auto peak = gpu.object("peak_dense_tflops");
  p.gpu.peak_bf16_flops = peak.number("bf16", kTflops) * kTera;
  p.gpu.peak_fp8_flops = peak.optional_number("fp8", kTflops).value_or(0.0) * kTera;
  peak.finish();
  p.gpu.memory_bytes = gpu.number("memory_GiB", kGiBytes) * kGiB;
  p.gpu.hbm_bandwidth = gpu.number("hbm_bandwidth_GBps", kGBps) * kGiga;
  gpu.finish();

  auto node = o.object("node");
  p.node.gpus_per_node = node.integer("gpus_per_node", kGpusPerNode);
  p.node.nvlink_bandwidth = node.number("nvlink_bandwidth_GBps", kGBps) * kGiga;
  p.node.nvlink_latency = node.number("nvlink_latency_us", kLatencyUs) * kMicro;
  node.finish();

  auto net = o.object("network");
  p.network.nics_per_node = net.integer("nics_per_node", kGpusPerNode);
  if (p.network.nics_per_node != p.node.gpus_per_node) {
    net.fail("nics_per_node", "must equal node.gpus_per_node (one NIC per GPU), got " +
                                  std::to_string(p.network.nics_per_node));
  }
  p.network.nic_bandwidth = net.number("nic_bandwidth_Gbps", kGbps) * kGiga / 8.0;
  p.network.nic_latency = net.number("nic_latency_us", kLatencyUs) * kMicro;
  p.network.nodes_per_leaf = net.integer("nodes_per_leaf", kNodesPerLeaf);
  p.network.leaf_oversubscription = net.number("leaf_oversubscription", {1.0, true, 1000.0, true});
  p.network.spine_latency = net.number("spine_latency_us", kLatencyUs) * kMicro;
  net.finish();

  auto eff = o.object("efficiency");
  p.efficiency.gemm = eff.number("gemm", kEfficiency);
  p.efficiency.gemm_fp8 = eff.optional_number("gemm_fp8", kEfficiency).value_or(p.efficiency.gemm);
  p.efficiency.attention = eff.number("attention", kEfficiency);
  p.efficiency.memory = eff.number("memory", kEfficiency);
  p.efficiency.nvlink = eff.number("nvlink", kEfficiency);
  p.efficiency.network = eff.number("network", kEfficiency);
  eff.finish();

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

  if (auto cal = o.optional_object("calibration")) {
    Calibration& c = p.calibration;
    // Each key optional (neutral when absent); bounds are what a physical value can be.
    auto value = [&](std::string_view key, RealRange range, double neutral) {
      return cal->optional_number(key, range).value_or(neutral);
    };
    c.sustained_compute = value("sustained_compute", {0.25, true, 1.0, true}, 1.0);
    c.sustained_fp8_gemm = value("sustained_fp8_gemm", {0.25, true, 1.0, true}, 1.0);
    c.gpu_speed_spread = value("gpu_speed_spread", {0.0, true, 0.2, true}, 0.0);
    c.band.p10 = value("residual_p10", {-0.5, true, 0.0, true}, 0.0);
    c.band.p90 = value("residual_p90", {0.0, true, 0.5, true}, 0.0);
    c.band.per_spread_p10 = value("residual_per_spread_p10", {-20.0, true, 0.0, true}, 0.0);
    c.band.per_spread_p90 = value("residual_per_spread_p90", {0.0, true, 20.0, true}, 0.0);
    cal->finish();
  }

  if (auto db = o.optional_string("kernel_database")) {
    const auto path = std::filesystem::path(file).parent_path() / *db;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      o.fail("kernel_database", path.string() + " is a directory, not a JSON file");
    }
    if (!std::filesystem::is_regular_file(path, ec)) {
      o.fail("kernel_database", "no such file: " + path.string());
    }
    p.kernel_db = std::make_shared<const KernelDatabase>(load_kernel_database(path));
    p.kernel_db_name = *db;
    p.kernel_db_path = path;
  }

  if (auto mem = o.optional_object("memory")) {
    p.memory.allocated = mem->number("allocated_overhead_MiB", kMiBytes) * kMiB;
    p.memory.reserved = mem->number("runtime_reserved_GiB", kGiBytesOrNone) * kGiB;
    p.memory.fragmentation = mem->number("fragmentation", {0.0, true, 1.0, true});
    mem->finish();
  }

  if (auto storage = o.optional_object("storage")) {
    p.storage.read_bandwidth = storage->number("read_bandwidth_GBps", kGBps) * kGiga;
    storage->finish();
  }

  o.allow({"sources", "notes"});
  o.finish();
  return p;
}

Platform load_platform(const std::filesystem::path& path) {
  return parse_platform_json(load_json_file(path), path.string());
}

}  // namespace trainsim
