#pragma once
// A parallel layout as `trainsim reshard` takes it on the command line: "tp=2,pp=1,dp=4", plus
// zero=, vp=, cp=, ep=, etp= where the plan has them, and vocab-divisible-by= (the layout's own
// vocabulary padding multiple). The rest of the plan (framework, vocabulary
// rule) comes from the base plan both layouts share.
#include <string>

#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// The layout written in `text` applied to `base`. InputError naming `flag` ("--from") and the
/// key at fault for a malformed layout, an unknown or repeated key or a value out of range.
Plan parse_layout(const std::string& text, const std::string& flag, Plan base);

/// "tp 2, pp 1, dp 4", with ", vp 2", ", cp 2", ", ep 8", ", etp 1" and ", zero 1" where they are
/// set.
std::string layout_text(const Plan& plan);

/// The partition rule of the plan's framework: Megatron-LM's uniform split (also used for
/// ColossalAI), nanotron's cost walk, DeepSpeed's default partition_method "parameters".
std::string framework_partition_rule(Framework framework);

/// The layout's feasibility for the model (what `run` checks: TP divides heads, KV heads and FFN
/// width, PP at most the layers, the framework's partition options). InputError naming `flag`
/// and the key ("--to tp: must divide the attention heads (32), got 3").
void validate_layout(const Plan& plan, const Model& model, const Platform& platform,
                     const std::string& flag);

/// The origin that names `flag` and the key for every plan field, for messages.
PlanOrigin layout_origin(const std::string& flag);

}  // namespace trainsim
