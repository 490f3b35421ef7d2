#include "trainer/kernels/cuda/device_select.hpp"

#include <charconv>
#include <optional>
#include <string_view>

#include <fmt/format.h>

namespace dlsweep::trainer::kernels::cuda {
namespace {

// A non-negative decimal integer, the whole string (leading digits of "2(x3)" for Slurm's
// task-per-node lists when `prefix` is allowed).
std::optional<int> parse_count(std::string_view s, bool prefix) {
  int v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || v < 0 || p == s.data()) return std::nullopt;
  if (!prefix && p != s.data() + s.size()) return std::nullopt;
  return v;
}

struct Source {
  const char* rank;
  const char* size;
  bool size_is_list;  ///< Slurm's "4(x3)" form; a list with ',' (uneven nodes) gives no size
};

}  // namespace

Result<LocalRank> local_rank(const EnvLookup& env) {
  static constexpr Source kSources[] = {
      {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", false},
      {"MPI_LOCALRANKID", "MPI_LOCALNRANKS", false},
      {"SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE", true},
  };
  for (const auto& src : kSources) {
    const char* v = env(src.rank);
    if (!v || !*v) continue;
    if (std::string_view(src.rank) == "SLURM_LOCALID") {
      const char* step = env("SLURM_STEP_NUM_TASKS");
      if (!step || !*step) continue;
    }
    auto r = parse_count(v, false);
    if (!r)
      return fail(fmt::format("{}='{}' is not a local rank (a non-negative integer)", src.rank, v), src.rank,
                  "start the ranks with mpirun or srun, which set it");
    LocalRank lr{*r, 1, src.rank};
    if (const char* s = env(src.size); s && *s && !(src.size_is_list && std::string_view(s).find(',') != std::string_view::npos)) {
      auto n = parse_count(s, src.size_is_list);
      if (!n || *n < 1)
        return fail(fmt::format("{}='{}' is not a number of ranks", src.size, s), src.size,
                    "start the ranks with mpirun or srun, which set it");
      lr.size = *n;
    }
    if (lr.rank >= lr.size && lr.size > 1)
      return fail(fmt::format("local rank {} from {} is not below the {} ranks on the node from {}", lr.rank,
                              src.rank, lr.size, src.size),
                  src.rank, "start the ranks with mpirun or srun, which set both");
    if (lr.size <= lr.rank) lr.size = lr.rank + 1;
    return lr;
  }
  return LocalRank{};
}

Result<int> select_device(int local_rank, int device_count) {
  if (device_count < 1)
    return fail_as(ErrorKind::resources, "no CUDA device is visible to this rank", "kernels: cuda",
                   "run on a GPU node (Slurm: --gpus-per-task or --gres=gpu:N) and check CUDA_VISIBLE_DEVICES");
  if (local_rank < 0) return fail(fmt::format("local rank {} is negative", local_rank), "kernels: cuda");
  if (device_count == 1) return 0;
  if (local_rank < device_count) return local_rank;
  return fail_as(ErrorKind::resources,
                 fmt::format("local rank {} has no GPU of its own: {} devices are visible on the node", local_rank,
                             device_count),
                 "kernels: cuda",
                 fmt::format("start at most {} ranks per node (--ntasks-per-node={}) or give each rank one GPU "
                             "(--gpus-per-task=1)",
                             device_count, device_count));
}

}  // namespace dlsweep::trainer::kernels::cuda
