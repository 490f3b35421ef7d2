// refusal.hpp — turns what sbatch (or libslurm) says when it refuses a job into an
// error that names the study key it comes from and the fix:
//   backend.partition: partition "gpu" does not exist on this cluster (fix: ...)
// and recognises a client that found no Slurm configuration at all (sbatch's
// "resolve_ctls_from_dns_srv" / "Could not establish a configuration source").
// Pure: text in, Error out.
#pragma once

#include <string_view>

#include "common/result.hpp"
#include "schedulers/slurm/options.hpp"

namespace dlsweep::sched::slurm {

/// `text`: sbatch's stderr (all of it) or the API's error string. Always returns an Error;
/// an unrecognised refusal is quoted as it is, under `backend`.
Error explain_refusal(std::string_view text, const SlurmOptions& options);

/// True when `text` says the client found no slurm.conf (nor a DNS SRV record).
bool is_missing_config(std::string_view text);

}  // namespace dlsweep::sched::slurm
