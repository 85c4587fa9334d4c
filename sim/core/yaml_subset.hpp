#pragma once
// The YAML that configuration files of Python trainers are written in (PyYAML's yaml.dump of a
// nested dict, nanotron's config files): block mappings and sequences by indentation, a sequence's
// items at or below its key, "- key: value" items, plain, single- and double-quoted scalars,
// null, booleans, integers, floats, and flow lists and maps of scalars on one line. What lies
// beyond (anchors and aliases, tags, block and multi-line scalars, tabs in the indentation) is an
// input error naming the line, never a silent misreading.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace trainsim {

/// The document as JSON (a later duplicate key replaces the earlier, as PyYAML does).
/// InputError naming `file` and the line for what the subset does not hold.
nlohmann::json parse_yaml_subset(std::string_view text, const std::string& file);

}  // namespace trainsim
