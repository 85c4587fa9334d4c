// Writes the published kernel-timing database from the reference measurements:
//   trainsim_published_db --refdata tests/validation/refdata
//       --out platforms/h100-sxm/kernels-published.json
// --refdata locates the reference files; entries always cite them by their repository path.
#include <iostream>
#include <string>

#include "kernels/host/published.hpp"
#include "sim/core/error.hpp"
#include "sim/core/files.hpp"

int main(int argc, char** argv) {
  std::string refdata = "tests/validation/refdata";
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--refdata" || a == "--out") && i + 1 < argc) {
      (a == "--refdata" ? refdata : out) = argv[++i];
    } else {
      std::cerr << "usage: trainsim_published_db [--refdata DIR] --out FILE\n";
      return 2;
    }
  }
  if (out.empty()) {
    std::cerr << "usage: trainsim_published_db [--refdata DIR] --out FILE\n";
    return 2;
  }
  try {
    const auto db =
        trainsim::kernels::build_published_database(refdata, "tests/validation/refdata");
    trainsim::write_file_atomically(out, trainsim::kernel_database_json(db));
    std::cout << "wrote " << out << " (" << db.entries().size() << " entries)\n";
  } catch (const trainsim::InputError& e) {
    std::cerr << "trainsim_published_db: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
