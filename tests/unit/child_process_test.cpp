// run_in_child and run_in_children: work in forked processes, its text passed back whole, in the
// order of the works, a failed work none.
#include "sim/core/child_process.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <stdexcept>
#include <string>

namespace trainsim {
namespace {

TEST(ChildProcess, TextComesBackAndAFailureIsNone) {
  const pid_t parent = ::getpid();
  // The work runs in another process: its pid differs.
  const auto pid = run_in_child([] { return std::to_string(::getpid()); });
  ASSERT_TRUE(pid.has_value());
  EXPECT_NE(*pid, std::to_string(parent));
  EXPECT_FALSE(run_in_child([]() -> std::string { throw std::runtime_error("no"); }));
  EXPECT_EQ(run_in_child([] { return std::string(); }), std::string());
}

TEST(ChildProcess, ChildrenReturnTheirTextsInTheOrderOfTheWorks) {
  // More than a pipe holds (64 KiB) from every child at once: read as it comes, not after exit.
  constexpr std::size_t kLarge = 300000;
  std::vector<std::function<std::string()>> works;
  for (int i = 0; i < 5; ++i) {
    works.emplace_back([i]() -> std::string {
      if (i == 3) throw std::runtime_error("work 3 fails");
      return std::string(kLarge, static_cast<char>('a' + i));
    });
  }
  for (const std::size_t jobs : {std::size_t{1}, std::size_t{2}, std::size_t{8}}) {
    const auto texts = run_in_children(works, jobs);
    ASSERT_EQ(texts.size(), 5U);
    for (int i = 0; i < 5; ++i) {
      if (i == 3) {
        EXPECT_FALSE(texts[3].has_value()) << jobs;
        continue;
      }
      ASSERT_TRUE(texts[i].has_value()) << i << " " << jobs;
      EXPECT_EQ(*texts[i], std::string(kLarge, static_cast<char>('a' + i))) << i << " " << jobs;
    }
  }
  EXPECT_TRUE(run_in_children({}, 4).empty());
}

}  // namespace
}  // namespace trainsim
