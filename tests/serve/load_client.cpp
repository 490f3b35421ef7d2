// load_client.cpp — see load_client.hpp.
#include "load_client.hpp"

#include <chrono>
#include <memory>

#include "http_client.hpp"

namespace dlsweep::serve::testing {
namespace {

std::string request(const std::string& target, bool close, const std::string& headers) {
  return "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n" + (close ? "Connection: close\r\n" : "") + headers +
         "\r\n";
}

void count(LoadCounts& c, const std::string& response) {
  ++c.requests;
  if (status_of(response) == 200) {
    ++c.ok;
    return;
  }
  ++c.errors;
  if (c.first_error.empty()) c.first_error = response.empty() ? "no answer" : response.substr(0, 300);
}

}  // namespace

LoadCounts burst(unsigned short port, const std::vector<std::string>& targets, int n, const std::string& headers) {
  std::vector<std::unique_ptr<Conn>> conns;
  for (int i = 0; i < n; ++i) conns.push_back(std::make_unique<Conn>(port, 120));
  for (int i = 0; i < n; ++i) conns[i]->send(request(targets[i % targets.size()], true, headers));
  LoadCounts c;
  for (auto& conn : conns) count(c, conn->read_response());
  return c;
}

Viewers::Viewers(unsigned short port, std::vector<std::string> targets, int n, double period_s,
                 const std::string& headers)
    : counts_(n) {
  for (int i = 0; i < n; ++i) {
    threads_.emplace_back([this, port, i, period_s, headers, target = targets[i % targets.size()]] {
      auto& c = counts_[i];
      std::unique_ptr<Conn> conn;
      auto next = std::chrono::steady_clock::now();
      while (!stop_) {
        if (!conn) conn = std::make_unique<Conn>(port, 120);
        std::string res;
        if (conn->send(request(target, false, headers))) res = conn->read_response();
        count(c, res);
        if (status_of(res) != 200 || res.find("Connection: close") != std::string::npos) conn.reset();
        next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(period_s));
        std::unique_lock lock(mu_);  // one wake-up per poll, not a spin: the viewers cost what tabs cost
        wake_.wait_until(lock, next, [this] { return stop_.load(); });
      }
    });
  }
}

Viewers::~Viewers() { stop(); }

LoadCounts Viewers::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  LoadCounts all;
  for (const auto& c : counts_) {
    all.requests += c.requests;
    all.ok += c.ok;
    all.errors += c.errors;
    if (all.first_error.empty()) all.first_error = c.first_error;
  }
  return all;
}

}  // namespace dlsweep::serve::testing
