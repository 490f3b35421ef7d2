// registry.cpp — the constructor of each backend kind (registry.hpp).
#include "schedulers/registry.hpp"

#include <fmt/format.h>

#include "schedulers/local/backend.hpp"
#include "schedulers/slurm/backend.hpp"
#include "schedulers/slurm/pool_backend.hpp"

namespace dlsweep::sched {

namespace {

Result<std::unique_ptr<Backend>> make_local(boost::asio::io_context& io, const BackendConfig& c) {
  LocalOptions o;
  o.keep_imported = c.options.local.keep_imported;
  return std::unique_ptr<Backend>(std::make_unique<LocalBackend>(io, c.max_concurrent, o));
}

Result<std::unique_ptr<Backend>> make_slurm(boost::asio::io_context& io, const BackendConfig& c) {
  if (c.study_root.empty())
    return fail("no study directory to keep the batch scripts in", "backend", "give BackendConfig::study_root");
  SlurmOptions o = c.options.slurm;
  o.script_dir = c.study_root / "slurm";  // BackendKind::study_dir_entries names it
  if (!o.template_path.empty() && o.template_path.is_relative()) o.template_path = c.study_dir / o.template_path;
  o.max_concurrent = c.max_concurrent;
  o.create_script_dir = c.create_dirs;
  if (o.workers > 0) {
    auto p = SlurmPoolBackend::create(io, std::move(o));
    if (!p) return std::unexpected(p.error());
    return std::unique_ptr<Backend>(std::move(*p));
  }
  auto b = SlurmBackend::create(io, std::move(o));
  if (!b) return std::unexpected(b.error());
  return std::unique_ptr<Backend>(std::move(*b));
}

struct Constructor {
  std::string_view kind;
  Result<std::unique_ptr<Backend>> (*make)(boost::asio::io_context&, const BackendConfig&);
};

constexpr Constructor kConstructors[] = {{"local", make_local}, {"slurm", make_slurm}};

}  // namespace

Result<std::unique_ptr<Backend>> make_backend(boost::asio::io_context& io, const BackendConfig& config) {
  if (find_backend_kind(config.kind))
    for (const auto& c : kConstructors)
      if (c.kind == config.kind) return c.make(io, config);
  std::string names;
  for (auto n : backend_kind_names()) names += (names.empty() ? "" : " or ") + std::string(n);
  return fail(fmt::format("unknown backend kind '{}'", config.kind), "backend.kind", "use " + names);
}

}  // namespace dlsweep::sched
