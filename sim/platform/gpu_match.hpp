#pragma once
// Whether a kernel database was measured on the platform's kind of GPU.
#include <optional>
#include <string>

#include "sim/platform/kernel_db.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// The GPU's model in an NVIDIA name, the first word that holds a digit up to a '-': "H100" of
/// "NVIDIA H100 80GB HBM3" and "NVIDIA H100 SXM5 80GB", "A100" of "NVIDIA A100-SXM4-80GB"; empty
/// where none does.
std::string gpu_model(const std::string& name);

/// Why `db` cannot time the kernels of `platform`'s GPU (another model: an A100 priced from H100
/// kernels runs faster than its peak), or nullopt; names that give no model are not compared.
std::optional<std::string> kernel_db_gpu_mismatch(const GpuSheet& gpu, const KernelDatabase& db);

}  // namespace trainsim
