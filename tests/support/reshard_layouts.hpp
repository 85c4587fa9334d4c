#pragma once
// The reshard tests' layouts: a layout as `--from` takes it, with a framework's partition rule,
// and its shards on an H100 cluster.
#include <string>

#include "sim/reshard/layout_spec.hpp"
#include "sim/reshard/shards.hpp"
#include "tests/support/support.hpp"

namespace trainsim::test {

/// "tp=2,pp=1,dp=4" under `framework`'s rules.
inline Plan reshard_layout(const std::string& text, Framework framework = Framework::kMegatron) {
  Plan base;
  base.framework = framework;
  base.partition = framework_partition_rule(framework);
  return parse_layout(text, "--from", base);
}

/// Every tensor of `model` placed under `plan`.
inline LayoutShards reshard_shards(const Model& model, const Plan& plan) {
  return shard_layout(model, catalog_platform("h100-sxm-ndr"), plan, layout_origin("--from"));
}

}  // namespace trainsim::test
