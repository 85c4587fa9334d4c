// build_id(): the running program's GNU build-id note, as binutils' readelf reads it from the
// program's file.
#include "sim/core/build_id.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace trainsim {
namespace {

// The "Build ID: ..." readelf -n prints for `file`; empty without readelf or a note.
std::string readelf_build_id(const std::string& file) {
  const std::string command = "readelf -n '" + file + "' 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, n);
  ::pclose(pipe);
  const std::string label = "Build ID: ";
  const auto at = text.find(label);
  if (at == std::string::npos) return {};
  const auto start = at + label.size();
  return text.substr(start, text.find('\n', start) - start);
}

TEST(BuildId, IsTheNoteReadelfReadsFromTheProgram) {
  const std::string expected =
      readelf_build_id(std::filesystem::read_symlink("/proc/self/exe").string());
  if (expected.empty()) GTEST_SKIP() << "readelf finds no build id in this test program";
  EXPECT_EQ(build_id(), expected);
  EXPECT_EQ(build_id().size(), 40U);  // SHA-1, the GNU linker's default
}

}  // namespace
}  // namespace trainsim
