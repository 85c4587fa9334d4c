// The progress line's text, and what the interrupt handler says from the outputs announced.
#include <gtest/gtest.h>

#include <pthread.h>

#include <csignal>
#include <cstring>
#include <thread>

#include "sim/core/interrupt.hpp"
#include "sim/core/progress.hpp"

namespace trainsim {
namespace {

TEST(Progress, CountsRateAndTimeLeft) {
  EXPECT_EQ(progress_text("replaying the step, ops", 120000, 480000, 3.0),
            "replaying the step, ops: 120,000/480,000, 40,000/s, 9 s left");
  // Minutes, then hours, for long work; nothing left once done.
  EXPECT_EQ(progress_text("plans", 1, 1001, 1.0), "plans: 1/1,001, 1/s, 17 min left");
  EXPECT_EQ(progress_text("plans", 1, 20001, 1.0), "plans: 1/20,001, 1/s, 5.6 h left");
  EXPECT_EQ(progress_text("plans", 10, 10, 2.0), "plans: 10/10, 5/s");
  // No total yet: the phase and how long it has run.
  EXPECT_EQ(progress_text("building the task graph", 0, 0, 3.4), "building the task graph, 3 s");
}

TEST(Interrupt, NamesThePendingOutputsAndTheNote) {
  clear_expected_outputs();
  char buffer[512];
  interrupt_message(SIGTERM, buffer, sizeof buffer);
  EXPECT_STREQ(buffer, "trainsim: interrupted by SIGTERM\n");
  expect_output("a.json");
  expect_output("b.svg");
  expect_output("a.json");  // once only
  output_written("a.json");
  set_interrupt_note("the plans done are kept in x.csv.part: rerun to resume");
  const int length = interrupt_message(SIGINT, buffer, sizeof buffer);
  EXPECT_STREQ(buffer,
               "trainsim: interrupted by SIGINT; not written: b.svg; the plans done are kept in "
               "x.csv.part: rerun to resume\n");
  EXPECT_EQ(length, static_cast<int>(std::strlen(buffer)));
  // A short buffer is cut, never overrun.
  char small[12];
  EXPECT_EQ(interrupt_message(SIGINT, small, sizeof small), 11);
  EXPECT_STREQ(small, "trainsim: i");
  clear_expected_outputs();
}

volatile std::sig_atomic_t terms_seen = 0;

// A SIGTERM raised while interrupts are held reaches its handler only when the hold ends.
TEST(Interrupt, HeldUntilTheStepIsDone) {
  struct sigaction counting {
  }, previous{};
  counting.sa_handler = [](int) { terms_seen = terms_seen + 1; };
  sigemptyset(&counting.sa_mask);
  ::sigaction(SIGTERM, &counting, &previous);
  {
    const InterruptsHeld held;
    ::raise(SIGTERM);
    EXPECT_EQ(terms_seen, 0);
  }
  EXPECT_EQ(terms_seen, 1);
  ::sigaction(SIGTERM, &previous, nullptr);
}

bool blocked_here(int signal) {
  sigset_t now;
  ::pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, signal) == 1;
}

// The program's own threads (progress line, validation pool) start with SIGINT and SIGTERM
// blocked and keep them so; the thread that made them keeps its mask.
TEST(Interrupt, OwnThreadsNeverTakeThem) {
  ASSERT_FALSE(blocked_here(SIGINT));
  bool int_blocked = false, term_blocked = false;
  std::thread worker = thread_without_interrupts([&] {
    int_blocked = blocked_here(SIGINT);
    term_blocked = blocked_here(SIGTERM);
  });
  worker.join();
  EXPECT_TRUE(int_blocked);
  EXPECT_TRUE(term_blocked);
  EXPECT_FALSE(blocked_here(SIGINT));
  EXPECT_FALSE(blocked_here(SIGTERM));
}

}  // namespace
}  // namespace trainsim
