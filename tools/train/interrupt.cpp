#include "train/interrupt.h"

#include <atomic>

namespace ember::train {
namespace {

std::atomic<bool> g_interrupt_requested{false};

extern "C" void on_interrupt(int) { g_interrupt_requested.store(true); }

}  // namespace

InterruptHandler::InterruptHandler(bool in_job) {
  g_interrupt_requested.store(false);
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // SA_RESETHAND restores the default action, so a second Ctrl-C ends the process at once.
  action.sa_flags = SA_RESETHAND;
  installed_int_ = ::sigaction(SIGINT, &action, &previous_int_) == 0;
  if (in_job) installed_term_ = ::sigaction(SIGTERM, &action, &previous_term_) == 0;
}

InterruptHandler::~InterruptHandler() {
  if (installed_int_) ::sigaction(SIGINT, &previous_int_, nullptr);
  if (installed_term_) ::sigaction(SIGTERM, &previous_term_, nullptr);
}

bool InterruptHandler::requested() { return g_interrupt_requested.load(); }

}  // namespace ember::train
