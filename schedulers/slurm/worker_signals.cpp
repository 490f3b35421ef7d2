// worker_signals.cpp — see worker_signals.hpp.
#include "schedulers/slurm/worker_signals.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <thread>

namespace dlsweep::sched::pool {

namespace {

sigset_t worker_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGUSR2, SIGTERM, SIGINT, SIGCHLD}) sigaddset(&set, s);
  return set;
}

}  // namespace

WorkerSignals::WorkerSignals() {
  const sigset_t set = worker_set();
  pthread_sigmask(SIG_BLOCK, &set, &old_);
  fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  // Without the descriptor nothing would ever read them: blocked, TERM and USR2 would be lost.
  if (fd_ < 0) pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

WorkerSignals::~WorkerSignals() {
  if (fd_ >= 0) ::close(fd_);
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

WorkerSignals::Seen WorkerSignals::wait(double max_s) {
  Seen seen;
  if (fd_ < 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(max_s));
    return seen;
  }
  pollfd p{fd_, POLLIN, 0};
  const int ms = max_s <= 0 ? 0 : static_cast<int>(std::ceil(max_s * 1000));
  if (::poll(&p, 1, ms) <= 0) return seen;
  signalfd_siginfo info{};
  while (::read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    switch (info.ssi_signo) {
      case SIGUSR2: seen.usr2 = true; break;
      case SIGTERM:
      case SIGINT: seen.term = true; break;
      case SIGCHLD: seen.child = true; break;
      default: break;
    }
  }
  return seen;
}

}  // namespace dlsweep::sched::pool
