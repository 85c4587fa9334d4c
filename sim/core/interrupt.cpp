#include "sim/core/interrupt.hpp"

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

namespace trainsim {

namespace {

constexpr int kSlots = 16;
constexpr int kPathBytes = 4096;

// A path in a fixed buffer; `state` is written last when filling and first when emptying, so the
// handler never reads a half-copied name.
struct Slot {
  char path[kPathBytes];
  volatile std::sig_atomic_t state;  // 0: free; temps: 1 registered; outputs: 1 pending, 2 written
};

Slot temps[kSlots];
Slot outputs[kSlots];
char note[kPathBytes];
volatile std::sig_atomic_t has_note = 0;

bool copy_path(char* to, std::string_view from) {
  if (from.size() + 1 > static_cast<std::size_t>(kPathBytes)) return false;
  std::memcpy(to, from.data(), from.size());
  to[from.size()] = '\0';
  return true;
}

int find_output(std::string_view path) {
  for (int i = 0; i < kSlots; ++i) {
    if (outputs[i].state != 0 && path == outputs[i].path) return i;
  }
  return -1;
}

// Appends to a buffer without allocating (the handler may not call malloc or snprintf).
struct Writer {
  char* buffer;
  int size;
  int length = 0;
  void add(const char* text) {
    while (*text != '\0' && length + 1 < size) buffer[length++] = *text++;
    buffer[length] = '\0';
  }
};

void on_signal(int signal) {
  for (auto& slot : temps) {
    if (slot.state == 1) ::unlink(slot.path);
  }
  char message[kSlots * 256 + 2 * kPathBytes];
  const int length = interrupt_message(signal, message, sizeof message);
  [[maybe_unused]] const auto ignored = ::write(2, message, static_cast<std::size_t>(length));
  // Die of the signal itself, so that a shell or a batch system sees what stopped the program.
  std::signal(signal, SIG_DFL);
  sigset_t just;
  sigemptyset(&just);
  sigaddset(&just, signal);
  ::pthread_sigmask(SIG_UNBLOCK, &just, nullptr);
  ::raise(signal);
  ::_exit(128 + signal);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

void reset_interrupt_handlers() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

InterruptsHeld::InterruptsHeld() : previous_{} {
  sigset_t held;
  sigemptyset(&held);
  sigaddset(&held, SIGINT);
  sigaddset(&held, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &held, &previous_);
}

InterruptsHeld::~InterruptsHeld() {
  ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

TempFileRegistration::TempFileRegistration(std::string_view path) : slot_(-1) {
  for (int i = 0; i < kSlots; ++i) {
    if (temps[i].state == 0 && copy_path(temps[i].path, path)) {
      temps[i].state = 1;
      slot_ = i;
      return;
    }
  }
}

TempFileRegistration::~TempFileRegistration() {
  if (slot_ >= 0) temps[slot_].state = 0;
}

void expect_output(std::string_view path) {
  if (find_output(path) >= 0) return;
  for (auto& slot : outputs) {
    if (slot.state == 0 && copy_path(slot.path, path)) {
      slot.state = 1;
      return;
    }
  }
}

void output_written(std::string_view path) {
  if (const int i = find_output(path); i >= 0) outputs[i].state = 2;
}

void set_interrupt_note(std::string_view text) {
  has_note = 0;
  if (!text.empty() && copy_path(note, text)) has_note = 1;
}

void clear_expected_outputs() {
  for (auto& slot : outputs) slot.state = 0;
  has_note = 0;
}

int interrupt_message(int signal, char* buffer, int size) {
  Writer w{buffer, size};
  w.add("trainsim: interrupted by ");
  w.add(signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal");
  bool first = true;
  for (const auto& slot : outputs) {
    if (slot.state != 1) continue;
    w.add(first ? "; not written: " : ", ");
    w.add(slot.path);
    first = false;
  }
  if (has_note) {
    w.add("; ");
    w.add(note);
  }
  w.add("\n");
  return w.length;
}

}  // namespace trainsim
