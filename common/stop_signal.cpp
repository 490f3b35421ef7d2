// stop_signal.cpp — see stop_signal.hpp.
#include "common/stop_signal.hpp"

#include <signal.h>

#include <atomic>
#include <initializer_list>

namespace dlsweep {

namespace {

std::atomic<int> g_seen{0};
struct sigaction g_previous[2];  // SIGINT, SIGTERM: what handled them before us

int slot(int sig) { return sig == SIGINT ? 0 : 1; }

void on_stop_signal(int sig, siginfo_t* info, void* context) {
  int none = 0;
  g_seen.compare_exchange_strong(none, sig);
  const struct sigaction& prev = g_previous[slot(sig)];
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler == SIG_DFL) {
    signal(sig, SIG_DFL);  // nobody else handles it: the default action, as before
    raise(sig);
  } else if (prev.sa_handler != SIG_IGN && prev.sa_handler) {
    prev.sa_handler(sig);
  }
}

}  // namespace

void watch_stop_signals() {
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_stop_signal) continue;  // already ours
    struct sigaction ours {};
    ours.sa_sigaction = on_stop_signal;
    ours.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    g_previous[slot(sig)] = current;
    sigaction(sig, &ours, nullptr);
  }
}

int stop_signal_seen() { return g_seen.load(); }

}  // namespace dlsweep
