#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"
#include "sim/core/interrupt.hpp"

int main(int argc, char** argv) {
  trainsim::install_interrupt_handlers();
  std::vector<std::string> args(argv + 1, argv + argc);
  const int code = trainsim::run_cli(args, std::cout, std::cerr);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  // SimGrid's teardown of a large platform is slow and the results are written: skip it.
  std::_Exit(code);
}
