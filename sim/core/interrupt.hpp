#pragma once
// What a SIGINT or SIGTERM leaves behind. The handler runs at any moment, so everything it reads
// is kept in fixed buffers set up beforehand: the temporary files being written (removed), the
// outputs a command promised and has not yet written (named in its last words), and a note (what
// was kept, such as a sweep's partial file). Then the program dies of the signal, at once.
#include <csignal>
#include <string_view>
#include <thread>
#include <utility>

namespace trainsim {

/// Installs the handler for SIGINT and SIGTERM (the command-line program calls it once).
void install_interrupt_handlers();

/// Restores the default action (a forked worker holds no temp file and says nothing).
void reset_interrupt_handlers();

/// A temporary file, registered while it exists; the handler unlinks what is registered.
class TempFileRegistration {
 public:
  explicit TempFileRegistration(std::string_view path);
  ~TempFileRegistration();
  TempFileRegistration(const TempFileRegistration&) = delete;
  TempFileRegistration& operator=(const TempFileRegistration&) = delete;

 private:
  int slot_;
};

/// While alive, SIGINT and SIGTERM wait in this thread (blocked, then delivered when it ends): a
/// step the handler must not split, such as putting an output in place and marking it written.
class InterruptsHeld {
 public:
  InterruptsHeld();
  ~InterruptsHeld();
  InterruptsHeld(const InterruptsHeld&) = delete;
  InterruptsHeld& operator=(const InterruptsHeld&) = delete;

 private:
  sigset_t previous_;
};

/// A thread that never takes SIGINT or SIGTERM (it starts with them blocked, and keeps them so):
/// the signals go to the thread that writes the outputs, so the handler never runs beside a step
/// that thread holds them for. The creating thread's mask is as before.
template <class Function>
std::thread thread_without_interrupts(Function&& f) {
  const InterruptsHeld held;
  return std::thread(std::forward<Function>(f));
}

/// An output the command will write; the handler names those still pending.
void expect_output(std::string_view path);
/// The output is complete (a later interrupt does not name it).
void output_written(std::string_view path);
/// A sentence the handler adds after the pending outputs (empty: none).
void set_interrupt_note(std::string_view note);
/// Forgets the outputs and the note (a test runs several commands in one process).
void clear_expected_outputs();

/// The handler's message for `signal` with the current state (testable without a signal).
/// Writes at most `size` - 1 bytes and a terminating NUL into `buffer`; returns the length.
int interrupt_message(int signal, char* buffer, int size);

}  // namespace trainsim
