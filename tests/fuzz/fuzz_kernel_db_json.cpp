// A kernel-timing database (platforms/*/kernels*.json): parsed, written back and parsed again (the
// writer must write what the reader takes), and each entry's shape looked up exactly and off its
// grid, where the lookup interpolates or takes the nearest entry.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <variant>

#include "sim/core/json_reader.hpp"
#include "sim/platform/kernel_db.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace trainsim;

// Half as large again (kept clear of overflow, which is the harness's, not the reader's).
void widen(std::int64_t& x) {
  if (x >= 0 && x < (std::int64_t{1} << 40)) x += x / 2 + 1;
}

// A shape between the database's grid points.
KernelShape off_grid(KernelShape shape) {
  if (auto* g = std::get_if<GemmShape>(&shape)) {
    widen(g->m);
  } else if (auto* a = std::get_if<AttentionShape>(&shape)) {
    widen(a->seq);
  } else if (auto* m = std::get_if<MemoryShape>(&shape)) {
    widen(m->cols);
  }
  return shape;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::expect_input_errors([&] {
    const auto j = parse_json_text(fuzz::text_of(data, size), "fuzz/kernels.json");
    const KernelDatabase db = parse_kernel_database_json(j, "fuzz/kernels.json");
    const std::string written = kernel_database_json(db);
    try {
      (void)parse_kernel_database_json(parse_json_text(written, "written"), "written");
    } catch (const InputError& e) {
      // Not bad input: the database was accepted, so this is the writer's or reader's bug.
      std::fprintf(stderr, "round trip refused: %s\n", e.what());
      std::abort();
    }
    const std::size_t n = std::min<std::size_t>(db.entries().size(), 16);
    for (std::size_t i = 0; i < n; ++i) {
      (void)db.lookup(db.entries()[i].shape);
      (void)db.lookup(off_grid(db.entries()[i].shape));
    }
  });
}
