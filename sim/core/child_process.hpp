#pragma once
// Work run in a forked child process, its result passed back as text through a pipe: for what a
// process can do once (SimGrid runs one simulation per process).
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trainsim {

/// Runs `work` in a child process and returns the text it returned; nullopt where the child could
/// not start, or `work` threw, or the child died. The standard streams are flushed first, so that
/// nothing the caller buffered is printed twice; the child takes a signal's default action.
std::optional<std::string> run_in_child(const std::function<std::string()>& work);

/// Each of `works` in a child process of its own, at most `jobs` at a time (at least one): their
/// texts in the order of `works`, each as run_in_child would give it.
std::vector<std::optional<std::string>> run_in_children(
    const std::vector<std::function<std::string()>>& works, std::size_t jobs);

}  // namespace trainsim
