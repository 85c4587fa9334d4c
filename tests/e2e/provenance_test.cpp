// Where each kernel time of a report came from: the published H100 database, and a measured
// database generated here (no measured H100 database exists yet).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kernels/host/shapes.hpp"
#include "sim/platform/kernel_db.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

double share(const nlohmann::json& report, const char* source) {
  return report["provenance"]["kernel_time_share"][source].get<double>();
}

// The default scenario on the H100's measured database (at least 90 % of its kernel time
// measured or interpolated), and on the published one when asked with --kernel-db.
TEST(Provenance, MeasuredKernelsOnTheH100) {
  const std::string scenario = test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json";
  const auto r = test::run_trainsim({"run", scenario, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GE(share(j, "measured") + share(j, "interpolated"), 0.9);
  EXPECT_EQ(share(j, "published"), 0.0);
  int attention = 0;
  for (const auto& k : j["provenance"]["kernels"]) {
    if (k["kind"] != "attention") continue;
    ++attention;
    EXPECT_EQ(k["source"], "measured") << k["name"];  // the catalog's shapes, timed exactly
  }
  EXPECT_EQ(attention, 8);  // forward and backward on each of 4 stages
  bool listed = false;
  for (const auto& in : j["provenance"]["inputs"]) {
    listed = listed || (in["role"] == "kernel_database" && in["name"] == "h100-sxm/kernels.json" &&
                        in["sha256"].get<std::string>().size() == 64);
  }
  EXPECT_TRUE(listed);

  const std::string published = test::source_dir() + "/platforms/h100-sxm/kernels-published.json";
  const auto p =
      test::run_trainsim({"run", scenario, "--kernel-db", published, "--format", "json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const auto pj = nlohmann::json::parse(p.out);
  EXPECT_GT(share(pj, "published"), 0.1);  // the attention kernels: FlashAttention-2 rows
  EXPECT_NEAR(share(pj, "published") + share(pj, "roofline"), 1.0, 1e-12);
  bool named = false;
  for (const auto& in : pj["provenance"]["inputs"]) {
    named = named || (in["role"] == "kernel_database" && in["name"] == published);
  }
  EXPECT_TRUE(named);
  const auto none = test::run_trainsim({"run", scenario, "--kernel-db", "none"});
  EXPECT_NE(none.out.find("kernel times: 100.0 % roofline"), std::string::npos) << none.out;
  const auto missing = test::run_trainsim({"run", scenario, "--kernel-db", "nope.json"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "trainsim: error: --kernel-db: no such file: nope.json\n");
  // Another GPU's database: an A100 from H100 kernels printed an MFU of 131 %.
  const std::string h100_db = test::source_dir() + "/platforms/h100-sxm/kernels.json";
  const auto other = test::run_trainsim(
      {"run", "--model", "llama3.1-8b", "--platform", "a100-sxm-hdr", "--kernel-db", h100_db});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_EQ(other.err.rfind("trainsim: error: --kernel-db: " + h100_db + " was measured on", 0), 0u)
      << other.err;
}

TEST(Provenance, MeasuredInterpolatedAndRoofline) {
  // A measured database of every Llama 3.1 8B kernel at TP 2, seq 8192, except the LM head
  // GEMM, measured only at 4096 and 16384 tokens: interpolated. The optimizer: roofline.
  const Model m = test::catalog_model("llama3.1-8b");
  const GemmShape lm_head{8192, 64128, 4096};
  std::vector<KernelDbEntry> entries;
  auto add = [&](const KernelShape& s, double seconds) {
    KernelDbEntry e;
    e.shape = s;
    e.median_s = seconds;
    e.p10_s = 0.95 * seconds;
    e.p90_s = 1.1 * seconds;
    e.repetitions = 20;
    entries.push_back(e);
  };
  for (const auto& s : kernels::model_shapes(m, 2, 1, 8192, Precision::kBF16)) {
    if (s == KernelShape(lm_head)) continue;
    add(s, 1e-3);
  }
  add(GemmShape{4096, 64128, 4096}, 4e-3);
  add(GemmShape{16384, 64128, 4096}, 16e-3);
  const std::string dir = test::make_temp_dir();
  test::write_file(dir + "/kernels.json",
                   kernel_database_json(KernelDatabase(KernelDbKind::kMeasured,
                                                       test::synthetic_db_meta(), entries)));
  auto platform =
      nlohmann::json::parse(test::read_file(test::source_dir() + "/platforms/h100-sxm-ndr.json"));
  platform["kernel_database"] = "kernels.json";
  // The database's times as they are: no calibration on top.
  platform.erase("calibration");
  platform.erase("overlap");
  test::write_file(dir + "/p.json", platform.dump());

  const auto r = test::run_trainsim({"run", "--model", "llama3.1-8b", "--platform", dir + "/p.json",
                                     "--tp", "2", "--seq-len", "8192", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& k : j["provenance"]["kernels"]) {
    const std::string name = k["name"];
    if (name == "lm_head.lm_head") {
      EXPECT_EQ(k["source"], "interpolated");
      EXPECT_NEAR(k["seconds"].get<double>(), 8e-3, 1e-12);  // 4 ms + 1/3 of the way to 16 ms
    } else if (k["pass"] == "optimizer") {
      EXPECT_EQ(k["source"], "roofline") << name;
    } else {
      EXPECT_EQ(k["source"], "measured") << name;
      EXPECT_DOUBLE_EQ(k["seconds"].get<double>(), 1e-3) << name;
    }
  }
  EXPECT_GT(share(j, "measured"), 0.9);
  EXPECT_GT(share(j, "interpolated"), 0.0);
  EXPECT_GT(share(j, "roofline"), 0.0);
  EXPECT_EQ(share(j, "published"), 0.0);
  EXPECT_NEAR(share(j, "measured") + share(j, "interpolated") + share(j, "roofline"), 1.0, 1e-12);
}

}  // namespace
}  // namespace trainsim
