#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/core/error.hpp"
#include "sim/platform/kernel_db.hpp"
#include "sim/platform/platform.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// A platform file that must be refused with exactly `expected` (its JSON path named).
void expect_error(const nlohmann::json& bad, const std::string& expected) {
  try {
    parse_platform_json(bad, "p.json");
    ADD_FAILURE() << "no error, expected " << expected;
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
}

TEST(Platform, H100SheetInSIUnits) {
  const Platform p = test::catalog_platform("h100-sxm-ndr");
  EXPECT_EQ(p.name, "h100-sxm-ndr");
  EXPECT_DOUBLE_EQ(p.gpu.peak_bf16_flops, 989e12);
  EXPECT_DOUBLE_EQ(p.gpu.peak_fp8_flops, 1979e12);
  EXPECT_DOUBLE_EQ(p.gpu.memory_bytes, 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(p.gpu.hbm_bandwidth, 3.35e12);
  EXPECT_EQ(p.node.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(p.node.nvlink_bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(p.network.nic_bandwidth, 50e9);  // 400 Gb/s
  EXPECT_DOUBLE_EQ(p.nic_link_bandwidth(), 50e9 * 0.94);
  // The roofline's efficiencies are the measured database's ceilings (to the 4 digits written).
  const auto& db = *p.kernel_db;
  EXPECT_NEAR(p.efficiency.gemm, *db.meta().gemm_bf16_tflops * 1e12 / p.gpu.peak_bf16_flops, 1e-4);
  EXPECT_NEAR(p.efficiency.gemm_fp8, *db.meta().gemm_fp8_tflops * 1e12 / p.gpu.peak_fp8_flops,
              1e-4);
  EXPECT_NEAR(p.efficiency.memory, *db.meta().copy_GBps * 1e9 / p.gpu.hbm_bandwidth, 1e-4);
}

TEST(Platform, RuntimeMemoryTerms) {
  const Platform h = test::catalog_platform("h100-sxm-ndr");
  EXPECT_DOUBLE_EQ(h.memory.allocated, 113.9 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(h.memory.reserved, 1.35 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(h.memory.fragmentation, 0.05);
  // The block is optional: a platform without it has no runtime terms.
  std::ifstream in(test::source_dir() + "/platforms/h100-sxm-ndr.json");
  auto j = nlohmann::json::parse(in);
  j.erase("memory");
  j.erase("kernel_database");  // its path resolves next to the platform file, not "p.json"
  const Platform bare = parse_platform_json(j, "p.json");
  EXPECT_DOUBLE_EQ(bare.memory.allocated, 0.0);
  EXPECT_DOUBLE_EQ(bare.memory.reserved, 0.0);
  EXPECT_DOUBLE_EQ(bare.memory.fragmentation, 0.0);
}

// Storage read bandwidth per node prices loading a checkpoint (trainsim reshard); platform files
// without the block keep reading, with the documented default.
TEST(Platform, StorageReadBandwidth) {
  EXPECT_DOUBLE_EQ(test::catalog_platform("h100-sxm-ndr").storage.read_bandwidth, 40e9);
  EXPECT_DOUBLE_EQ(test::catalog_platform("a100-sxm-hdr").storage.read_bandwidth,
                   kDefaultStorageReadBandwidth);
  EXPECT_DOUBLE_EQ(kDefaultStorageReadBandwidth, 10e9);
  std::ifstream in(test::source_dir() + "/platforms/h100-sxm-ndr.json");
  auto j = nlohmann::json::parse(in);
  j.erase("kernel_database");  // a path relative to the platform file
  EXPECT_DOUBLE_EQ(parse_platform_json(j, "p.json").storage.read_bandwidth, 40e9);
  j["storage"]["read_bandwidth_GBps"] = 0;
  EXPECT_THROW(parse_platform_json(j, "p.json"), InputError);
  j["storage"] = {{"read_bandwidth_GBps", 12.5}, {"write_bandwidth_GBps", 5}};
  try {
    parse_platform_json(j, "p.json");
    ADD_FAILURE() << "unknown storage key accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("p.json: $.storage.write_bandwidth_GBps: unknown key", 0),
              0u)
        << e.what();
  }
}

TEST(Platform, CalibrationBlock) {
  // Absent: neutral; each key bounded to what a physical value can be.
  const Calibration none;
  EXPECT_DOUBLE_EQ(compute_time_factor(none, 4096), 1.0);
  // The A100's fit (5 fitting rows) set only the sustained share; the spread stays neutral, so
  // compute takes 1 / sustained share of its database time.
  const Calibration a100 = test::catalog_platform("a100-sxm-hdr").calibration;
  EXPECT_DOUBLE_EQ(a100.gpu_speed_spread, 0.0);
  EXPECT_GT(a100.sustained_compute, 0.5);
  EXPECT_LT(a100.sustained_compute, 0.9);
  EXPECT_DOUBLE_EQ(compute_time_factor(a100, 4096), 1.0 / a100.sustained_compute);
  std::ifstream in(test::source_dir() + "/platforms/h100-sxm-ndr.json");
  auto j = nlohmann::json::parse(in);
  j.erase("kernel_database");
  j["calibration"] = {{"sustained_compute", 0.8}, {"gpu_speed_spread", 0.02}};
  const Calibration c = parse_platform_json(j, "p.json").calibration;
  EXPECT_DOUBLE_EQ(c.band.p10, 0.0);
  EXPECT_TRUE(c.band.empty());
  // 1 GPU waits for no other; 1024 for the slowest of 1024 (Blom: 3.234 standard deviations).
  EXPECT_DOUBLE_EQ(compute_time_factor(c, 1), 1 / 0.8);
  EXPECT_NEAR(compute_time_factor(c, 1024), (1 + 0.02 * 3.2341) / 0.8, 1e-4);
  // An FP8 GEMM's factor: the common one, then 1 / sustained_fp8_gemm (neutral 1 when absent).
  EXPECT_DOUBLE_EQ(compute_time_factor(c, 1, true), 1 / 0.8);
  j["calibration"]["sustained_fp8_gemm"] = 0.9;
  EXPECT_DOUBLE_EQ(compute_time_factor(parse_platform_json(j, "p.json").calibration, 1, true),
                   1 / 0.8 / 0.9);
  j["calibration"]["sustained_fp8_gemm"] = 0.1;  // below a quarter of the measured rate
  expect_error(
      j, "p.json: $.calibration.sustained_fp8_gemm: must be a number >= 0.25 and <= 1, got 0.1");
  j["calibration"].erase("sustained_fp8_gemm");
  j["calibration"]["sustained_compute"] = 1.5;  // above the measured rate
  expect_error(
      j, "p.json: $.calibration.sustained_compute: must be a number >= 0.25 and <= 1, got 1.5");
}

// h200-sxm-ndr has no step times to fit on: its file says it takes h100-sxm-ndr's calibration,
// overlap slowdown and FlashAttention-2 factor (the same software on the same compute units).
// Held here so that a refit of the H100 cannot leave the H200 on the old values again.
TEST(Platform, H200TakesTheH100Calibration) {
  const auto read = [](const std::string& name) {
    std::ifstream in(test::source_dir() + "/platforms/" + name + ".json");
    return nlohmann::json::parse(in);
  };
  const auto h100 = read("h100-sxm-ndr");
  const auto h200 = read("h200-sxm-ndr");
  EXPECT_EQ(h200.at("calibration"), h100.at("calibration"));
  EXPECT_EQ(h200.at("overlap"), h100.at("overlap"));
  EXPECT_EQ(h200.at("attention_backends"), h100.at("attention_backends"));
}

TEST(Platform, ExpectedMaximumOfNormals) {
  EXPECT_NEAR(standard_normal_quantile(0.975), 1.959964, 1e-6);
  EXPECT_NEAR(standard_normal_quantile(0.001), -3.090232, 1e-6);  // the lower tail's formula
  EXPECT_NEAR(standard_normal_quantile(0.5), 0.0, 1e-15);
  EXPECT_DOUBLE_EQ(expected_max_standard_normal(1), 0.0);
  // Blom's approximation against E[max] by quadrature: 1.029 (4), 1.766 (16), 3.248 (1024).
  EXPECT_NEAR(expected_max_standard_normal(4), 1.029, 0.025);
  EXPECT_NEAR(expected_max_standard_normal(16), 1.766, 0.005);
  EXPECT_NEAR(expected_max_standard_normal(1024), 3.248, 0.015);
}

TEST(Platform, A100Sheet) {
  const Platform p = test::catalog_platform("a100-sxm-hdr");
  EXPECT_DOUBLE_EQ(p.gpu.peak_bf16_flops, 312e12);
  EXPECT_DOUBLE_EQ(p.gpu.peak_fp8_flops, 0.0);
  EXPECT_DOUBLE_EQ(p.node.nvlink_bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(p.network.nic_bandwidth, 25e9);             // 200 Gb/s
  EXPECT_DOUBLE_EQ(p.efficiency.gemm_fp8, p.efficiency.gemm);  // not given: the BF16 one
}

nlohmann::json h100_sheet() {
  std::ifstream in(test::source_dir() + "/platforms/h100-sxm-ndr.json");
  auto j = nlohmann::json::parse(in);
  j.erase("kernel_database");  // its path resolves next to the platform file, not "p.json"
  return j;
}

TEST(Platform, StrictInputRulesBetweenFields) {
  const auto j = h100_sheet();
  auto bad = j;
  bad["network"]["nics_per_node"] = 4;
  expect_error(
      bad,
      "p.json: $.network.nics_per_node: must equal node.gpus_per_node (one NIC per GPU), got 4");
  bad = j;
  bad["efficiency"]["gemm"] = 1.2;
  expect_error(bad, "p.json: $.efficiency.gemm: must be a number >= 0.01 and <= 1, got 1.2");
}

TEST(Platform, StrictInputPhysicalBounds) {
  const auto j = h100_sheet();
  // Above: an NVLink latency of 1e30 s, a BF16 peak of 1e308 TFLOP/s.
  auto bad = j;
  bad["node"]["nvlink_latency_us"] = 1e30;
  expect_error(bad,
               "p.json: $.node.nvlink_latency_us: must be a number >= 0 and <= 1e+06, got 1e+30");
  bad = j;
  bad["gpu"]["peak_dense_tflops"]["bf16"] = 1e308;
  expect_error(bad,
               "p.json: $.gpu.peak_dense_tflops.bf16: must be a number >= 0.1 and <= 1e+05, got "
               "1e+308");
  // ... and below: 1e-300 GB/s of NVLink, 2^62 nodes per leaf switch, 2^40 GPUs per node.
  bad = j;
  bad["node"]["nvlink_bandwidth_GBps"] = 1e-300;
  expect_error(bad,
               "p.json: $.node.nvlink_bandwidth_GBps: must be a number >= 0.1 and <= 1e+06, got "
               "1e-300");
  bad = j;
  bad["network"]["nodes_per_leaf"] = std::int64_t{1} << 62;
  expect_error(bad,
               "p.json: $.network.nodes_per_leaf: must be an integer in [1, 1048576], got "
               "4611686018427387904");
  bad = j;
  bad["node"]["gpus_per_node"] = std::int64_t{1} << 40;
  expect_error(bad,
               "p.json: $.node.gpus_per_node: must be an integer in [1, 4096], got 1099511627776");
  bad = j;
  bad["memory"]["runtime_reserved_GiB"] = -1;
  expect_error(bad,
               "p.json: $.memory.runtime_reserved_GiB: must be a number >= 0 and <= 65536, got -1");
  bad = j;
  bad["gpu"]["hbm_bandwidth_GBps"] = -1;
  expect_error(bad,
               "p.json: $.gpu.hbm_bandwidth_GBps: must be a number >= 0.1 and <= 1e+06, got -1");
}

TEST(Platform, StrictInputUnknownKeysAndTypes) {
  const auto j = h100_sheet();
  auto bad = j;
  bad["node"]["nvlink_bandwidth"] = 450;
  expect_error(bad,
               "p.json: $.node.nvlink_bandwidth: unknown key; did you mean nvlink_bandwidth_GBps? "
               "(known keys here: gpus_per_node, "
               "nvlink_bandwidth_GBps, nvlink_latency_us)");
  bad = j;
  bad["memory"]["fragmentation_percent"] = 5;
  expect_error(
      bad,
      "p.json: $.memory.fragmentation_percent: unknown key (known keys here: "
      "allocated_overhead_MiB, cublas_workspace_MiB, fragmentation, runtime_reserved_GiB)");
  bad = j;
  bad["memory"]["cublas_workspace_MiB"] = "32";
  expect_error(
      bad,
      "p.json: $.memory.cublas_workspace_MiB: must be a number >= 0 and <= 67108864, got a "
      "string \"32\"");
}

}  // namespace
}  // namespace trainsim
