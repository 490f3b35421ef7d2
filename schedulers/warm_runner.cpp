// warm_runner.cpp — see warm_runner.hpp.
#include "schedulers/warm_runner.hpp"

#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "common/atomic_file.hpp"
#include "common/protocol.hpp"

namespace dlsweep::sched::warm {

namespace fs = std::filesystem;

bool runs_warm(const std::vector<std::string>& argv, int ranks, std::string_view launcher) {
  if (ranks != 1 || !launcher.empty() || argv.size() < 3) return false;
  const std::string prog = fs::path(argv[0]).filename().string();
  return prog.rfind("python", 0) == 0 && argv[1] == "-m" && argv[2] == "dlsweep_optuna";
}

std::string share_key(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  nlohmann::json k{{"argv", argv}, {"env", nlohmann::json::object()}};
  for (const auto& [name, value] : env)
    if (name.rfind("DLSWEEP_", 0) != 0) k["env"][name] = value;
  return k.dump();
}

std::vector<std::string> server_argv(const std::vector<std::string>& argv, const fs::path& serve_dir) {
  std::vector<std::string> out = argv;
  out.push_back("--serve");
  out.push_back(serve_dir.string());
  return out;
}

Status hand_over(const fs::path& serve_dir, long seq, const fs::path& trial_dir,
                 const std::map<std::string, std::string>& env) {
  nlohmann::json job{{"seq", seq},
                     {"dir", trial_dir.string()},
                     {"env", env},
                     {"stdout", (trial_dir / protocol::kStdoutFile).string()},
                     {"stderr", (trial_dir / protocol::kStderrFile).string()}};
  return write_file_atomic(serve_dir / "job.json", job.dump() + "\n", Durability::none);
}

std::optional<int> finished(const fs::path& serve_dir, long seq) {
  std::ifstream in(serve_dir / "done.json");
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto done = nlohmann::json::parse(text, nullptr, false);
  if (!done.is_object() || done.value("seq", 0L) != seq) return std::nullopt;
  const auto& code = done["exit_code"];
  return code.is_number_integer() ? code.get<int>() : 1;
}

void request_stop(const fs::path& serve_dir) {
  write_file_atomic(serve_dir / "stop", "stop\n", Durability::none);
}

}  // namespace dlsweep::sched::warm
