// The accuracy guard: trainsim validate on the whole DGX Cloud reference file, its checking half
// (which the calibration never saw) held to where it stands against the targets, dense
// and mixture-of-experts rows apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/validate/validate.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const ValidationSet& dgxc_set() {
  static const ValidationSet set =
      validate_reference(
          test::source_dir() + "/tests/validation/refdata/nvidia_dgxc_benchmarking_h100.json",
          test::catalog_platform("h100-sxm-ndr"))
          .at(0);
  return set;
}

// The expressed checking rows whose name holds `part`, dense (no "(MoE)") or mixture-of-experts.
ValidationSet checking_rows(const std::string& part, bool moe) {
  ValidationSet out = dgxc_set();
  out.rows.clear();
  for (const auto& r : dgxc_set().rows) {
    const bool is_moe = r.name.find("(MoE)") != std::string::npos;
    if (!r.skipped && r.half == "check" && is_moe == moe && r.name.find(part) != std::string::npos)
      out.rows.push_back(r);
  }
  return out;
}

// The accuracy guard: the checking half of the DGX Cloud dense rows, which the platform's
// calibration never saw (results/calibrate.py fits on the fitting half), against the issue's
// targets: BF16 mean 3 % and max 8 %, FP8 mean 5 % (max 8 % here too), and the P10-P90 band
// holding the measured step on 80 % of the rows. Where it stands since the rows run what their
// recipes set (README, Accuracy, the sixth refit: the Nemotron-4 340B runs' deferred LM-head
// weight gradients and v24.11.1's selective recomputation, NeMo 2's BF16 runs' BF16 gradient
// reduction): BF16 3.18 %, over its target, and the band on 22 of 36 (61 %); before, with those
// settings missing from the fitting rows, 3.01 % and 25. The seventh refit, after the embedding's
// and LM head's TP calls were made Megatron-Core's: 3.21 %, the band on 22. A 36-row sample's
// coverage has a standard deviation of 6.7 points; the guard is that no row more leaves the band
// and no mean grows past where it stands. With v25.04.02's eight Nemotron-4 340B rows expressed
// (their VP from the launch script; the same layout as v25.05.05's rows, measured 5-6 % faster):
// BF16 3.35 % on 19 rows, FP8 2.66 % on 25, the band on 24 of 44. Since the band's residuals
// are cross-validated (each fitting row predicted by the fit on the other folds, as a conformal
// interval needs; the fit itself unchanged): the band on 28 of 44. With the eight supervised
// fine-tuning rows expressed (packed documents; all checking rows): BF16 3.36 % on 23, FP8 2.73 %
// on 29, the band on 33 of 52. With the twelve LoRA rows: BF16 3.31 % on 29, FP8 2.95 % on 35,
// the band on 40 of 64, and one row over the 8 % maximum (Llama 3 70B FP8 LoRA on 32 GPUs,
// -11.7 %: its measured step grows 13 % from 16 GPUs, cause not established). Since attention
// shorter than the database's shortest is priced by its tiles (the packed 200-token documents
// had been roofline-timed): BF16 3.26 %, FP8 3.01 %, the band on 42, the FP8 maximum 9.1 % on
// three LoRA rows over 8 % (that row -9.1 %; Llama 3 8B FP8 LoRA on 16 and 32 GPUs +9.1 and
// +8.8 %, their SFT twins within 1 %). Since a frozen linear's FP8 cast leaves out the
// transpose and the adapters' elementwise ops are priced as they run: FP8 2.88 %, one row over
// 8 % (the 70B row, -9.6 %; the 8B FP8 LoRA rows +6.3 to +7.8 %). Since each FP8 weight is
// quantised once a step and the calibration refitted (the ninth): BF16 3.23 %, FP8 3.12 %, the
// band on 46, three LoRA rows over 8 % (-9.0 %, +9.3 % and +9.0 %). Since the LoRA rows'
// interleaved pipelines wait for their exchanges (no comm-overlap callback in their recipe):
// BF16 3.10 %, FP8 3.16 %, the band on 45 (the 70B FP8 row on 16 GPUs, now +7.2 %, left it), two
// LoRA rows over 8 % (Llama 3 8B FP8 on 16 and 32 GPUs; the 70B row on 32 GPUs -3.8 %). The
// tenth refit, after the Nemotron-4 340B rows of v24.11.1 ran their BF16 optimizer state (eight
// fitting rows up to 0.5 % faster), moved every prediction by under 0.1 % but narrowed the
// band's fold-fitted bounds (per spread -0.975/+0.67 to -0.864/+0.64): BF16 3.10 %, FP8 3.17 %,
// the band on 41 (the plain band on 51 of 64). Since the context-parallel ring's merges of its
// steps' partial results are priced (Transformer Engine's copies and adds; the Llama 3.1 8B CP 2
// rows 1.3 to 1.8 % slower, the calibration not refitted): BF16 3.1 %, FP8 3.3 %, the band on 40.
// The eleventh refit, after them: BF16 2.99 % (the target met), max 6.1 %; FP8 3.33 %, max 8.9 %
// (the same two LoRA rows over 8 %); the band, wider (per spread -0.982/+0.752), on 47.
TEST(ValidateStepTime, CheckingHalfStaysWithinItsErrorBounds) {
  const auto bf16 = checking_rows(" BF16 ", false).errors_of("", "");
  const auto fp8 = checking_rows(" FP8 ", false).errors_of("", "");
  EXPECT_EQ(bf16.rows, 29);     // 6 with context parallelism, 4 SFT, 6 LoRA
  EXPECT_EQ(fp8.rows, 35);      // 8 with context parallelism, 4 SFT, 6 LoRA
  EXPECT_LE(bf16.mean, 0.030);  // the target: met since the eleventh refit
  EXPECT_LE(bf16.max, 0.080);
  EXPECT_LE(fp8.mean, 0.050);
  EXPECT_LE(fp8.max, 0.090);  // the target is 0.080: missed on two LoRA rows
  const auto [inside, checking] = checking_rows("", false).in_band("check");
  EXPECT_EQ(checking, 64);
  EXPECT_GE(inside, 47);  // the target is 52 (80 %)
}

// The mixture-of-experts rows (Grok-1, DeepSeek-V3, Llama 4 Maverick), all checking rows: where
// they stand, not yet the dense targets (README, Accuracy, names the causes). BF16 Grok-1 and
// Llama 4 with expert TP = TP within 17 % (the 2- and 4-layer proxies on 8 and 16 GPUs
// furthest: their sequential experts, 4 and 2 a GPU, priced as the database's plain GEMMs, miss
// what each local expert costs beyond its GEMMs), within 7 % at 32 GPUs and more; every MoE row
// optimistic but one, none off by more than 25 %; FP8 rows further off than BF16 ones (their
// speed-up over BF16 is predicted above the measured one, cause not established).
TEST(ValidateStepTime, MoeRowsWhereTheyStand) {
  const auto all = checking_rows("", true);
  EXPECT_EQ(all.errors_of("", "").rows, 42);
  EXPECT_LE(all.errors_of("", "").max, 0.25);
  std::int64_t pessimistic = 0;
  for (const auto& r : all.rows) pessimistic += r.error() > 0.01 ? 1 : 0;
  // Over 1 % slow: Grok-1 BF16 512 GPUs with expert TP 1 (v25.05.05); from the CP ring's merges
  // to the eleventh refit also Grok-1 BF16 2048 GPUs (v24.11.1, +1.1 %, since +0.4 %).
  EXPECT_EQ(pessimistic, 1);
  double bf16_max = 0, bf16_max_32 = 0;
  for (const auto& r : all.rows) {
    if (r.name.find(" BF16 ") == std::string::npos || r.setup.find("etp 4") == std::string::npos)
      continue;
    bf16_max = std::max(bf16_max, std::abs(r.error()));
    const bool proxy_on_8_or_16 =
        r.name.find(" 8 GPUs") != std::string::npos || r.name.find(" 16 GPUs") != std::string::npos;
    if (!proxy_on_8_or_16) bf16_max_32 = std::max(bf16_max_32, std::abs(r.error()));
  }
  EXPECT_LE(bf16_max, 0.17);
  EXPECT_LE(bf16_max_32, 0.07);
  EXPECT_GT(checking_rows(" FP8 ", true).errors_of("", "").mean,
            checking_rows(" BF16 ", true).errors_of("", "").mean);
}

// The runs ran, so their plans fit their GPUs: every expressed row's predicted peak, at least
// without the allocator fragmentation the platform assumes (5 %, never measured), is within
// 80 GiB. Nemotron-4 340B on 128 GPUs in v24.11.1 (dp 2) was over it even without, 89 and
// 93 GiB, until its YAML's BF16 optimizer state was run (--optimizer-state bf16). One row,
// Llama 3 70B fine-tuning on 32 GPUs, is over 80 GiB only with the fragmentation: trainsim check's
// oom warning.
TEST(ValidateStepTime, PublishedRunsFitTheirGpus) {
  std::int64_t predicted = 0;
  for (const auto& r : dgxc_set().rows) {
    if (r.skipped) continue;
    ++predicted;
    EXPECT_GT(r.peak_unfragmented_bytes, 0) << r.name;
    EXPECT_LT(r.peak_unfragmented_bytes, r.peak_bytes) << r.name;
  }
  EXPECT_EQ(predicted, 136);
  for (const ValidationRow* r : dgxc_set().rows_whose_memory(MemoryFit::kOver)) {
    ADD_FAILURE() << r->name;
  }
  EXPECT_LE(dgxc_set().rows_whose_memory(MemoryFit::kTight).size(), 1u);
}

}  // namespace
}  // namespace trainsim
