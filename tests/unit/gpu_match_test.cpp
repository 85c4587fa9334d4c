#include "sim/platform/gpu_match.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

TEST(KernelDb, DatabaseOfAnotherGpuIsRefused) {
  // An A100 platform naming the H100's database would price its kernels above its own peak.
  auto a100 =
      nlohmann::json::parse(test::read_file(test::source_dir() + "/platforms/a100-sxm-hdr.json"));
  a100["kernel_database"] = test::source_dir() + "/platforms/h100-sxm/kernels.json";
  try {
    parse_platform_json(a100, "/p.json");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "was measured on NVIDIA H100 80GB HBM3 (H100), the platform's GPU is NVIDIA "
                  "A100 SXM4 80GB (A100)"),
              std::string::npos)
        << e.what();
  }
}

// The GPU's model in the names CUDA, the platforms and the published tables give it.
TEST(KernelDb, GpuModelOfANvidiaName) {
  EXPECT_EQ(gpu_model("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(gpu_model("NVIDIA H100 SXM5 80GB"), "H100");
  EXPECT_EQ(gpu_model("NVIDIA A100-SXM4-80GB"), "A100");
  EXPECT_EQ(gpu_model("NVIDIA H200"), "H200");
  EXPECT_EQ(gpu_model("test gpu"), "");
  for (const char* p : {"h100-sxm-ndr", "h200-sxm-ndr"}) {
    const Platform platform = test::catalog_platform(p);
    EXPECT_FALSE(kernel_db_gpu_mismatch(platform.gpu, *platform.kernel_db)) << p;
  }
}

}  // namespace
}  // namespace trainsim
