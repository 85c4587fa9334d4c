// A kernel database is read once per process while its file is unchanged, and read again when
// the file is rewritten (sim/platform/kernel_db_cache.cpp).
#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/platform/kernel_db.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

std::string db_text(std::vector<KernelDbEntry> entries) {
  return kernel_database_json(
      KernelDatabase(KernelDbKind::kMeasured, test::synthetic_db_meta(), std::move(entries)));
}

TEST(KernelDbCache, ReadOncePerFileWhileUnchanged) {
  const std::string dir = test::make_temp_dir();
  const std::string path = dir + "/db.json";
  test::write_file(path, db_text({test::db_entry(GemmShape{8192, 3072, 4096}, 1e-4)}));
  const auto first = shared_kernel_database(path);
  ASSERT_EQ(first->entries().size(), 1u);
  EXPECT_EQ(shared_kernel_database(path), first);  // the same object, not read again
  EXPECT_EQ(shared_kernel_database(dir + "/./db.json"), first);

  // Rewritten with another entry: another size, so read again; the first copy is unchanged.
  test::write_file(path, db_text({test::db_entry(GemmShape{8192, 3072, 4096}, 1e-4),
                                  test::db_entry(MemoryShape{"adam", 1, 1 << 20}, 2e-5)}));
  const auto second = shared_kernel_database(path);
  EXPECT_NE(second, first);
  EXPECT_EQ(second->entries().size(), 2u);
  EXPECT_EQ(first->entries().size(), 1u);

  // A bad file is an InputError each time, never a stale copy; a good one is read after it.
  test::write_file(path, "{\"version\": 1}");
  EXPECT_THROW(shared_kernel_database(path), InputError);
  EXPECT_THROW(shared_kernel_database(path), InputError);
  test::write_file(path, db_text({test::db_entry(GemmShape{4096, 4096, 4096}, 3e-5)}));
  EXPECT_NEAR(shared_kernel_database(path)->entries().at(0).median_s, 3e-5, 1e-18);
  EXPECT_THROW(shared_kernel_database(dir + "/missing.json"), InputError);
}

}  // namespace
}  // namespace trainsim
