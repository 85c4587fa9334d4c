#pragma once
// The published kernel-timing database: built only from the reference measurements in
// tests/validation/refdata/ until the suite has been run on an H100.
//  - GEMM: the best measured H100 SXM matmul rates (BF16 and FP8) of
//    h100_gemm_max_achievable_tflops.json, each at the shape it was measured at:
//    time = 2 m n k / rate. They are exact-shape entries (and the database's GEMM ceilings).
//  - Attention: the FlashAttention-2 rows of flashattention_h100_kernel_tflops.json's fwd+bwd
//    figure (head dims 64 and 128, causal and not, sequence 512 to 16k), at the batch and heads
//    of each row: time = 3.5 x the forward FLOPs (the harness convention) / rate. The lookup
//    applies a row's rate to the forward and the backward kernel alike (see kernel_db.hpp).
#include <filesystem>
#include <string>

#include "sim/platform/kernel_db.hpp"

namespace trainsim::kernels {

/// Reads the reference files under `refdata_dir`; `cited_as` is how entries name that folder
/// in their `source` (the repository path, never a machine path). InputError on a bad file.
KernelDatabase build_published_database(const std::filesystem::path& refdata_dir,
                                        const std::string& cited_as);

}  // namespace trainsim::kernels
