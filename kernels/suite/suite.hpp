#pragma once
// The suite's driver: times every selected shape (after a correctness check and warm-up
// launches, one CUDA event pair per launch, each launch queued behind a short GPU spin so that
// no host time is counted) and writes the kernel-timing database, again every
// `checkpoint_seconds` and when stopped by SIGINT or SIGTERM, so that a run cut short keeps what
// it measured. Google Benchmark registers and reports the shapes (manual time).
#include "kernels/host/suite_run.hpp"

namespace trainsim::kernels {

/// Exit code: 0, or 1 when a correctness check failed (that shape is left out of the database
/// and named in its notes).
int run_suite(const SuiteRun& run);

}  // namespace trainsim::kernels
