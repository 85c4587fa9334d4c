#pragma once
// The catalog: models/, platforms/ and scenarios/ under the data directory ($TRAINSIM_DATA_DIR,
// else the source tree trainsim was built from). A user names an entry or gives a path.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim {

std::filesystem::path data_dir();

/// The platform a command uses where neither a flag nor a file names one: run and check given
/// flags only, a sweep file without "platform", reshard.
inline constexpr const char* kDefaultPlatform = "h100-sxm-ndr";

/// Resolves `spec` as a path to an existing file, else as the name of an entry of
/// `<data_dir>/<folder>/<spec>.json` or of one of the folder's shelves, else (models only) as a
/// folder holding a config.json, as a Hugging Face snapshot does. `where` names the flag or
/// JSON path in error messages.
std::filesystem::path resolve_catalog_entry(std::string_view folder, std::string_view spec,
                                            std::string_view where);

/// The file of the catalog entry `name` in `folder` or one of its shelves (the folder first),
/// if there is one.
std::optional<std::filesystem::path> catalog_entry(std::string_view folder, std::string_view name);

/// Names of the entries of a catalog folder, sorted.
std::vector<std::string> catalog_names(std::string_view folder);

/// The subfolders of a catalog folder whose entries are found by name too, in search order:
/// scenarios/seeds (the framework failures trainsim catches) and scenarios/teaching.
std::vector<std::string> catalog_shelves(std::string_view folder);

}  // namespace trainsim
