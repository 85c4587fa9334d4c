#pragma once
// Hardware only: the GPU sheet, the node (NVLink/NVSwitch), the network (one NIC per GPU on a
// rail-optimised two-tier fat-tree) and the efficiencies that turn sheet values into achieved
// ones. All values in SI units inside (FLOP/s, bytes, bytes/s, seconds).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/platform/calibration.hpp"

namespace trainsim {

struct GpuSheet {
  std::string name;
  double peak_bf16_flops = 0;  // dense
  double peak_fp8_flops = 0;   // dense; 0 when the GPU has no FP8 tensor cores
  double memory_bytes = 0;
  double hbm_bandwidth = 0;  // bytes/s
};

struct NodeSpec {
  std::int64_t gpus_per_node = 0;
  double nvlink_bandwidth = 0;  // bytes/s per direction per GPU (through the NVSwitch)
  double nvlink_latency = 0;    // seconds per NVLink hop (GPU to switch, switch to GPU)
};

struct NetworkSpec {
  std::int64_t nics_per_node = 0;
  double nic_bandwidth = 0;  // bytes/s per direction per NIC
  double nic_latency = 0;    // seconds per NIC hop (GPU to leaf switch, leaf to GPU)
  std::int64_t nodes_per_leaf = 0;
  double leaf_oversubscription =
      1;                     // leaf down-ports / up-ports bandwidth ratio (1 = non-blocking)
  double spine_latency = 0;  // seconds per leaf-spine hop
};

/// Achieved fraction of a sheet value, per kind of work or link.
struct Efficiency {
  double gemm = 1;
  double gemm_fp8 = 1;  // FP8 GEMMs against the FP8 peak (the file's gemm when not given)
  double attention = 1;
  double memory = 1;  // elementwise kernels and the optimizer step, against HBM bandwidth
  double nvlink = 1;
  double network = 1;
};

/// Concurrent kernels on one GPU.
struct OverlapSpec {
  /// While communication kernels run, compute runs this fraction slower (they take SMs and
  /// memory bandwidth). 0 until calibrated against a measurement of overlapped kernels.
  double compute_slowdown = 0;
};
class KernelDatabase;
/// GPU memory that is neither model state nor activations (see the platform's sources for the
/// calibration). Absent from a platform file: all zero.
struct RuntimeMemory {
  /// Bytes the framework's caching allocator counts beyond model state and activations (library
  /// workspaces, the batch, temporaries): what torch.cuda.max_memory_allocated sees on top.
  double allocated = 0;
  /// Transformer Engine's cuBLAS workspace on this GPU: the one every GEMM shares is in
  /// `allocated`; grouped GEMMs and TP-overlapped GEMMs take more of them (see memory.cpp).
  double cublas_workspace = 0;
  /// Bytes outside the caching allocator: CUDA context, NCCL buffers, library handles, and what
  /// the driver keeps of the sheet capacity.
  double reserved = 0;
  /// The caching allocator's reserve above its allocated peak, as a fraction of that peak.
  double fragmentation = 0;
};

/// Checkpoint storage seen from one node: a shared parallel file system read by all the node's
/// GPUs together. Absent from a platform file: kDefaultStorageReadBandwidth.
struct StorageSpec {
  double read_bandwidth = 0;  // bytes/s per node
};
/// 10 GB/s per node: a conservative assumption for a shared file system without GPUDirect
/// Storage, used where the platform file has no "storage" block (see README, Platforms).
inline constexpr double kDefaultStorageReadBandwidth = 10e9;

struct Platform {
  std::string name;
  std::string description;
  GpuSheet gpu;
  NodeSpec node;
  NetworkSpec network;
  Efficiency efficiency;
  OverlapSpec overlap;
  Calibration calibration;
  /// Kernel timings looked up before the roofline (optional "kernel_database" key, a path
  /// relative to the platform file); null when the platform has none.
  std::shared_ptr<const KernelDatabase> kernel_db;
  std::string kernel_db_name;            // as written in the platform file
  std::filesystem::path kernel_db_path;  // resolved
  RuntimeMemory memory;
  StorageSpec storage{kDefaultStorageReadBandwidth};
  /// FlashAttention-2's time over the kernel database's fused attention (cuDNN's) at the same
  /// shape, for --attention-backend flash-attn2 (optional "attention_backends" block); unset:
  /// the platform cannot price that backend.
  std::optional<double> flash_attn2_time_factor;

  double nvlink_link_bandwidth() const { return node.nvlink_bandwidth * efficiency.nvlink; }
  double nic_link_bandwidth() const { return network.nic_bandwidth * efficiency.network; }
};

Platform load_platform(const std::filesystem::path& path);
/// `file` names the platform in messages; a kernel_database path is resolved next to it.
Platform parse_platform_json(const nlohmann::json& j, const std::string& file);

}  // namespace trainsim
