// slurm_parse_fuzz.cpp — libFuzzer target: what squeue/sacct/scontrol print
// (schedulers/slurm/parse.cpp). Any text gives records or an Error; never a crash, UB or
// an exception. The same bytes go to every parser: the JSON one, the `sacct -P` lines, the
// scontrol config reader, array task expressions and state names.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "schedulers/slurm/parse.hpp"

namespace slurm = dlsweep::sched::slurm;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto jobs = slurm::parse_squeue_json(text))
    for (const auto& j : *jobs) (void)j.native_id();
  if (auto lines = slurm::parse_sacct(text))
    for (const auto& j : *lines) (void)slurm::decode_wait_status(j.wait_status);
  (void)slurm::parse_max_array_size(text);
  // A small limit keeps each run fast ("0-4000000000" is refused, not expanded).
  if (auto tasks = slurm::parse_array_tasks(text, 100'000)) (void)slurm::format_array_tasks(*tasks);
  (void)slurm::is_final(slurm::parse_job_state(text));
  return 0;
}
