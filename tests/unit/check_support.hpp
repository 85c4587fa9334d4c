#pragma once
// The diagnostics of a scenario or a model with plan flags, as `trainsim check` finds them: what
// the diagnostics tests share.
#include <map>
#include <string>
#include <vector>

#include "sim/cli/scenario.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/search/diagnose.hpp"
#include "tests/support/support.hpp"

namespace trainsim {

struct Checked {
  ResolvedInputs in;
  Partition partition;
  std::vector<Diagnostic> diagnostics;

  std::vector<const Diagnostic*> with_id(const std::string& id) const {
    std::vector<const Diagnostic*> out;
    for (const auto& d : diagnostics) {
      if (d.id == id) out.push_back(&d);
    }
    return out;
  }
};

inline Checked check_request(InputRequest req) {
  Checked c{resolve_inputs(req), {}, {}};
  c.partition = build_partition(c.in.model, c.in.platform, c.in.plan, c.in.origin);
  const auto costs = compute_costs(c.in.model, c.in.platform, c.in.plan, c.partition);
  c.diagnostics = diagnose(c.in.model, c.in.platform, c.in.plan, c.partition, costs);
  return c;
}

inline Checked check(const std::string& scenario, std::map<std::string, std::string> flags = {}) {
  InputRequest req;
  req.scenario = test::source_dir() + "/scenarios/" + scenario + ".json";
  req.plan_flags = std::move(flags);
  return check_request(std::move(req));
}

// A model file (our JSON or a Hugging Face config) on the H100 platform with these plan flags.
inline Checked check_model(const std::string& model, std::map<std::string, std::string> flags) {
  InputRequest req;
  req.model = model;
  req.platform = "h100-sxm-ndr";
  req.plan_flags = std::move(flags);
  return check_request(std::move(req));
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace trainsim
