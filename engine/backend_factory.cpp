// backend_factory.cpp — a study's backend section as the registry's BackendConfig (paths
// made absolute), built by sched::make_backend.
#include "engine/backend_factory.hpp"

#include "schedulers/registry.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

Result<std::unique_ptr<sched::Backend>> make_backend(boost::asio::io_context& io, const StudySpec& spec,
                                                     const fs::path& study_root, bool create_dirs) {
  sched::BackendConfig c;
  c.kind = spec.backend.kind;
  c.max_concurrent = static_cast<std::size_t>(spec.backend.max_concurrent);
  c.create_dirs = create_dirs;
  c.options = spec.backend.options;
  c.study_root = study_root;
  c.study_dir = spec.study_dir;
  auto b = sched::make_backend(io, c);
  if (!b) return fail_in(b.error(), spec.source + ": backend");
  return b;
}

}  // namespace dlsweep::orch
