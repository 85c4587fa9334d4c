#pragma once
// `trainsim validate`: trainsim's predictions against published measurements, row by row, with
// the rows it cannot express listed and the reason why. Implemented: the peak allocated memory
// and the iteration time of Megatron-LM's CI runs on DGX H100 (tests/validation/refdata/
// megatron_lm_ci_golden_values_h100.json, completed by megatron_lm_ci_model_args_h100.json) and
// the step time of Megatron-LM README's weak-scaling runs
// (megatron_lm_readme_h100_weak_scaling.json), of NVIDIA's DGX Cloud recipes
// (nvidia_dgxc_benchmarking_h100.json) and of Megatron-LM's SC21 weak-scaling table on DGX A100
// (narayanan2021_megatron_a100_table1_table2.json); and one's own measured runs, scenario files
// with their measured step times (measured_runs.hpp).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/memory/memory_fit.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// What a reference set measured.
enum class Quantity { kMemory, kStepTime };

struct ValidationRow {
  std::string name;
  std::string setup;                   // the run in a few words
  std::optional<std::string> skipped;  // why the row is not expressed
  std::string note;                    // an assumption the prediction makes, if any
  std::int64_t stage = -1;             // the pipeline stage compared (memory)
  std::string half;  // step time: "fit" or "check", the row's half of the fixed split
  double measured = 0;
  double predicted = 0;
  double kernel_spread = 0;  // step time: the P10-P90 width of the plan's kernels (band scale)
  /// Step time: the worst stage's predicted device peak, with the platform's assumed allocator
  /// fragmentation and without it (StageMemory); 0 where not predicted. The run ran, so its plan
  /// must fit at least without the fragmentation.
  double peak_bytes = 0;
  double peak_unfragmented_bytes = 0;
  /// Step time: the largest peak any stage allocates (torch.cuda.max_memory_allocated, the
  /// platform's allocated overhead included) and that stage (the first such); 0 and -1 where not
  /// predicted.
  double peak_allocated_bytes = 0;
  std::int64_t largest_allocation_stage = -1;
  /// Memory: the allocated bytes after the step (model state and the buffers the run keeps, no
  /// activations), measured and predicted; both 0 where the reference does not log them.
  double measured_after_step = 0;
  double predicted_after_step = 0;
  /// Memory: whether the row joins the fit of the allocated overhead (a mixture-of-experts row
  /// does not: its residual also holds the routing imbalance its run's data decided).
  bool fits_overhead = true;
  double error() const { return (predicted - measured) / measured; }  // signed, relative
  bool logs_after_step() const { return measured_after_step > 0; }
  double after_step_residual() const { return measured_after_step - predicted_after_step; }
};

struct ValidationSet {
  Quantity quantity = Quantity::kMemory;
  std::string reference;  // file name of the reference set
  std::string metric;     // what was measured and what is predicted, in words
  std::string platform;
  double allocated_overhead = 0;  // the platform's allocated runtime overhead in each prediction
  double gpu_memory_bytes = 0;    // step time: the platform's memory per GPU
  /// Step time: the platform calibration's band.
  ResidualBand band;
  std::vector<ValidationRow> rows;

  std::int64_t expressed() const;
  double mean_abs_error() const;  // over expressed rows; 0 when none
  /// The mean signed error over expressed rows (0 when none): below 0, the predictions are
  /// faster (or smaller) than the measurements on average.
  double mean_signed_error() const;
  /// The expressed row with the largest |error|; nullptr when none.
  const ValidationRow* worst() const;
  /// Median over the expressed rows that fit the overhead of measured - (predicted -
  /// allocated_overhead): the fit of the platform's allocated overhead (one number for every row).
  double overhead_fit() const;
  std::int64_t overhead_fit_rows() const;
  /// Mean and max |error| when each row's overhead is the median fit on the other rows only.
  std::pair<double, double> leave_one_out_errors() const;
  /// Expressed rows whose name contains `part` (all with "") in half `half` (any with ""):
  /// their count, mean and max |error|.
  struct Errors {
    std::int64_t rows = 0;
    double mean = 0;
    double max = 0;
  };
  Errors errors_of(const std::string& part, const std::string& half) const;
  /// Expressed rows of `half` (any with "") whose measured value lies in the prediction's band,
  /// and how many rows there are.
  std::pair<std::int64_t, std::int64_t> in_band(const std::string& half) const;
  /// Mean and max |error| without the platform's allocated overhead.
  std::pair<double, double> errors_without_overhead() const;
  /// Memory: measured minus predicted allocated bytes after the step, over the expressed rows
  /// whose reference logs them, in row order.
  std::vector<std::pair<const ValidationRow*, double>> after_step_residuals() const;
  double after_step_median() const;  // of those residuals; 0 when none
  /// Step time: the expressed rows with a predicted peak that stands so against the GPU.
  std::vector<const ValidationRow*> rows_whose_memory(MemoryFit fit) const;
};

/// The reference set used when `trainsim validate` is given none (under the data directory).
std::filesystem::path default_reference();

/// Whether trainsim knows `reference` as a reference set (by its file name).
bool is_reference_set(const std::filesystem::path& reference);
/// The reference sets trainsim knows, in words, for a message.
std::string known_reference_sets();

/// Compares trainsim with the reference file: one set per quantity it measured (Megatron-LM's CI:
/// memory, then step time; the others: step time). InputError naming the file (and JSON path)
/// when it is not a reference set trainsim knows, or is malformed.
std::vector<ValidationSet> validate_reference(const std::filesystem::path& reference,
                                              const Platform& platform);

/// One reference set: Megatron-LM README's weak-scaling table on DGX H100
/// (megatron_readme_step_time.cpp).
ValidationSet validate_megatron_readme_step_time(const std::filesystem::path& reference,
                                                 const Platform& platform);

/// One reference set: NVIDIA's DGX Cloud recipes' step times (dgxc_step_time.cpp).
ValidationSet validate_dgxc_step_time(const std::filesystem::path& reference,
                                      const Platform& platform);

/// One reference set: Megatron-LM's SC21 weak-scaling table on DGX A100 (sc21_step_time.cpp).
ValidationSet validate_sc21_step_time(const std::filesystem::path& reference,
                                      const Platform& platform);

/// One reference set: Megatron-LM's MoE layer benchmark on one DGX H100 node
/// (moe_layer_time.cpp): forward + backward time of one MoE layer.
ValidationSet validate_moe_layer_time(const std::filesystem::path& reference,
                                      const Platform& platform);

/// The platform a reference set was measured on (a catalog name): what `trainsim validate` uses
/// for it when no --platform is given.
std::string reference_platform(const std::filesystem::path& reference);

/// The comparison as Markdown: one table of expressed rows with mean and max error, one of
/// skipped rows by reason.
std::string validation_markdown(const std::vector<ValidationSet>& sets);
std::string validation_json(const std::vector<ValidationSet>& sets);

}  // namespace trainsim
