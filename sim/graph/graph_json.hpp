#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/graph/task_graph.hpp"

namespace trainsim {

/// The task graph as JSON: {"groups": [...], "ranks": [{"stage", "ops": [...]}]}.
nlohmann::json task_graph_to_json(const TaskGraph& graph);
/// Reads a task graph written by task_graph_to_json (strict; InputError naming `file`).
TaskGraph task_graph_from_json(const nlohmann::json& j, const std::string& file);

}  // namespace trainsim
