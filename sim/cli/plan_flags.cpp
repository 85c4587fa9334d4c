#include "sim/cli/plan_flags.hpp"

#include <boost/program_options.hpp>

#include "sim/cli/command_line.hpp"
#include "sim/plan/plan_schema.hpp"

namespace po = boost::program_options;

namespace trainsim {

po::options_description plan_options() {
  po::options_description d("Plan (Megatron-LM names; a flag overrides the scenario's value)",
                            kHelpWidth, kHelpDescriptionWidth);
  // Every field of the plan schema, in its order: --NAME VALUE, or a switch (--no-NAME where the
  // field defaults to on).
  for (const auto& f : plan_fields()) {
    if (f.type == FieldType::kBool) {
      d.add_options()(switch_flag(f).substr(2).c_str(), po::bool_switch(), f.help.c_str());
    } else {
      d.add_options()(flag_of(f.name).substr(2).c_str(),
                      po::value<std::string>()->value_name(f.value_name), f.help.c_str());
    }
  }
  return d;
}

}  // namespace trainsim
