#include "sim/platform/gpu_match.hpp"

#include <cctype>
#include <sstream>

namespace trainsim {

std::string gpu_model(const std::string& name) {
  std::istringstream words(name);
  std::string word;
  while (words >> word) {
    const std::string model = word.substr(0, word.find('-'));
    for (char c : model) {
      if (std::isdigit(static_cast<unsigned char>(c))) return model;
    }
  }
  return "";
}

std::optional<std::string> kernel_db_gpu_mismatch(const GpuSheet& gpu, const KernelDatabase& db) {
  const std::string& measured_on = db.meta().gpu_name;
  const std::string want = gpu_model(gpu.name), have = gpu_model(measured_on);
  if (want.empty() || have.empty() || want == have) return std::nullopt;
  return "was measured on " + measured_on + " (" + have + "), the platform's GPU is " + gpu.name +
         " (" + want + "): name a database of " + want + " kernels, or none for the roofline";
}

}  // namespace trainsim
