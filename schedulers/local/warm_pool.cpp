// warm_pool.cpp — see warm_pool.hpp.
#include "schedulers/local/warm_pool.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "schedulers/process_spawn.hpp"
#include "schedulers/warm_runner.hpp"

namespace dlsweep::sched {

namespace fs = std::filesystem;

WarmPool::WarmPool(std::size_t max_idle) : max_idle_(max_idle == 0 ? 1 : max_idle) {}

WarmPool::~WarmPool() {
  for (auto& r : idle_) stop(r);
  idle_.clear();
  std::error_code ec;
  if (!root_.empty()) fs::remove_all(root_, ec);
}

void WarmPool::stop(WarmRunner& r) {
  // An idle runner holds no trial: nothing to save, so no grace.
  ::kill(-r.pid, SIGKILL);
  int status = 0;
  while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
  }
  forget(r);
}

void WarmPool::forget(const WarmRunner& r) {
  std::error_code ec;
  fs::remove_all(r.dir, ec);
}

void WarmPool::reap_idle() {
  for (auto it = idle_.begin(); it != idle_.end();) {
    int status = 0;
    pid_t got = ::waitpid(it->pid, &status, WNOHANG);
    if (got == it->pid || (got < 0 && errno == ECHILD)) {
      ::kill(-it->pid, SIGKILL);  // whatever it left in its group
      forget(*it);
      it = idle_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<WarmRunner> WarmPool::take(const std::vector<std::string>& argv, const fs::path& workdir,
                                  const std::map<std::string, std::string>& env, bool& started) {
  reap_idle();
  const std::string key = warm::share_key(argv, env);
  for (auto it = idle_.begin(); it != idle_.end(); ++it) {
    if (it->key != key) continue;
    WarmRunner r = *it;
    idle_.erase(it);
    started = false;
    return r;
  }
  if (root_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = (fs::path(tmp && *tmp ? tmp : "/tmp") / "dlsweep-warm-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      return fail(fmt::format("cannot create a directory for kept-imported runners ({}): {}", pattern,
                              std::strerror(errno)),
                  "backend.keep_imported", "make TMPDIR a writable directory, or remove keep_imported");
    root_ = pattern;
  }
  WarmRunner r;
  r.key = key;
  r.dir = root_ / fmt::format("runner-{}", ++started_);
  std::error_code ec;
  fs::create_directories(r.dir, ec);
  if (ec)
    return fail(fmt::format("cannot create {}: {}", r.dir.string(), ec.message()), "backend.keep_imported",
                "make TMPDIR a writable directory, or remove keep_imported");
  auto pid = spawn_process(warm::server_argv(argv, r.dir), workdir, env, /*die_with_parent=*/true);
  if (!pid) {
    forget(r);
    return std::unexpected(pid.error());
  }
  r.pid = *pid;
  started = true;
  return r;
}

Status WarmPool::hand_over(WarmRunner& r, const fs::path& workdir, const std::map<std::string, std::string>& env) {
  return warm::hand_over(r.dir, ++r.seq, workdir, env);
}

std::optional<int> WarmPool::finished(const WarmRunner& r) const { return warm::finished(r.dir, r.seq); }

void WarmPool::give_back(WarmRunner r) {
  idle_.push_back(std::move(r));
  while (idle_.size() > max_idle_) {
    stop(idle_.front());
    idle_.pop_front();
  }
}

}  // namespace dlsweep::sched
