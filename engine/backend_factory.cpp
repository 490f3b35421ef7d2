#include "engine/backend_factory.hpp"

#include <fmt/format.h>

#include "schedulers/local/backend.hpp"
#include "schedulers/slurm/backend.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

Result<std::unique_ptr<sched::Backend>> make_backend(boost::asio::io_context& io, const StudySpec& spec,
                                                     const fs::path& study_root) {
  auto concurrency = static_cast<std::size_t>(spec.backend.max_concurrent);
  if (spec.backend.kind == "local")
    return std::unique_ptr<sched::Backend>(std::make_unique<sched::LocalBackend>(io, concurrency));
  if (spec.backend.kind == "slurm") {
    sched::SlurmOptions o = spec.backend.slurm;
    o.max_concurrent = concurrency;
    o.script_dir = study_root / "slurm";
    std::error_code ec;
    fs::create_directories(o.script_dir, ec);
    if (ec) return fail("cannot create " + o.script_dir.string() + ": " + ec.message(), spec.source, "check runs_dir");
    if (!o.template_path.empty() && o.template_path.is_relative())
      o.template_path = fs::absolute(fs::path(spec.source), ec).parent_path() / o.template_path;
    auto b = sched::SlurmBackend::create(io, std::move(o));
    if (!b) return fail_in(b.error(), spec.source + ": backend");
    return std::unique_ptr<sched::Backend>(std::move(*b));
  }
  return fail(fmt::format("unknown backend kind '{}'", spec.backend.kind), spec.source + ": backend.kind",
              "use local or slurm");
}

}  // namespace dlsweep::orch
