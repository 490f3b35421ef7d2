// drivers.cpp — the registry of Slurm drivers: the one file that knows whether
// libslurm was compiled in (DLSWEEP_HAVE_LIBSLURM, set by CMake when libslurm and
// <slurm/slurm.h> are found). "cli" is always available and is the default.
#include <fmt/format.h>

#include "schedulers/slurm/cli_driver.hpp"
#include "schedulers/slurm/driver.hpp"
#if DLSWEEP_HAVE_LIBSLURM
#include "schedulers/slurm/api_driver.hpp"
#endif

namespace dlsweep::sched::slurm {

bool driver_available(std::string_view name) {
  if (name == "cli") return true;
#if DLSWEEP_HAVE_LIBSLURM
  if (name == "api") return true;
#endif
  return false;
}

Result<std::unique_ptr<Driver>> make_driver(const SlurmOptions& options) {
  if (options.driver == "cli") return std::unique_ptr<Driver>(std::make_unique<CliDriver>(options));
  if (options.driver == "api") {
#if DLSWEEP_HAVE_LIBSLURM
    auto d = ApiDriver::create(options);
    if (!d) return std::unexpected(d.error());
    return std::unique_ptr<Driver>(std::move(*d));
#else
    return fail("this dlsweep was built without libslurm", "slurm.driver: api",
                "install libslurm-dev and rebuild, or use driver: cli");
#endif
  }
  return fail(fmt::format("unknown driver '{}'", options.driver), "slurm.driver", "use cli or api");
}

}  // namespace dlsweep::sched::slurm
