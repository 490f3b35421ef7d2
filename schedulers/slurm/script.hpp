// script.hpp — turns one batch of trials (same resource shape) into what is handed to
// Slurm: the batch script rendered from the mustache template, the index file the script
// reads its trial from, and the structured SubmitRequest for the drivers.
//
// Invariants:
//  - Pure: no I/O except find_default_template()/load_template(). Same inputs, same bytes,
//    which is what the golden-file tests pin down.
//  - Every study-derived value is quoted for where it lands (slurm/quote.hpp) or refused
//    with an Error naming the trial token and the field. Nothing from a JobSpec is ever
//    inserted into shell code directly: argv, env and the trial dir live in the index file.
//  - Index file: line 1 is a comment; line i+2 is array task i:
//      TASK TOKEN TRIAL_DIR N_ENV KEY=VALUE... ARGV...
//    every field one index_word(). A task never reads another task's line (the script
//    checks the task number), and a requeued task reads the same line again.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "schedulers/backend.hpp"
#include "schedulers/slurm/driver.hpp"
#include "schedulers/slurm/options.hpp"

namespace dlsweep::sched::slurm {

/// One trial of a batch: array task i is tasks[i].
struct BatchTask {
  std::string token;                        ///< "study/trial/attempt"
  std::filesystem::path trial_dir;          ///< absolute
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};

struct BatchRequest {
  std::string study;
  std::string tag;                          ///< unique per submission: file names and --comment
  std::filesystem::path script_dir;         ///< absolute
  int ranks = 1;                            ///< > 1: launched with srun --mpi=pmix
  std::string launcher;                     ///< JobSpec::launcher (launch.hpp)
  bool warn_always = true;                  ///< JobSpec::warn_always
  int time_limit_min = 0;                   ///< 0: options.time_limit (0 there too: not set)
  std::size_t throttle = 0;                 ///< array %throttle; 0 or >= tasks: none
  std::vector<BatchTask> tasks;

  std::filesystem::path script_path() const { return script_dir / (tag + ".sh"); }
  std::filesystem::path index_path() const { return script_dir / (tag + ".index"); }
};

/// A batch of one task, `spec`'s own job: the one place a single job's request is built
/// (preflight, `--as-job`'s orchestrator, the pilot pool's trial scripts in submit and in
/// --dry-run). `time_limit_min` 0: the options' time.
BatchRequest single_job_request(const JobSpec& spec, std::string tag, std::filesystem::path script_dir,
                                int time_limit_min = 0);

/// The job name of every job of a study: "dlsweep:<study>" (find_jobs() looks for it).
std::string job_name_for(const std::string& study);

/// The index file's text (see the header comment). Errors name the task's token.
Result<std::string> render_index(const BatchRequest& batch);

/// The SubmitRequest fields (no script yet) for a batch under these options.
Result<SubmitRequest> build_submit_request(const SlurmOptions& options, const BatchRequest& batch);

/// The #SBATCH lines for a request, in a fixed order, values quoted for sbatch.
Result<std::vector<std::string>> sbatch_directives(const SubmitRequest& req, const SlurmOptions& options);

/// Standalone section-tag lines ({{#x}}, {{^x}}, {{/x}} alone on a line) as the mustache
/// spec renders them — removed whether the section renders or not — which kainjow does only
/// for rendered sections: mark_standalone_sections before rendering, drop_section_marks
/// after.
std::string mark_standalone_sections(const std::string& text);
std::string drop_section_marks(const std::string& rendered);

/// Renders the template. Fails on a template that does not parse or render.
Result<std::string> render_script(const std::string& template_text, const SlurmOptions& options,
                                  const BatchRequest& batch, const SubmitRequest& req);

/// Everything for one submission: the request (script included) and the index text.
struct PreparedBatch {
  SubmitRequest request;
  std::string index_text;
};
Result<PreparedBatch> prepare_batch(const std::string& template_text, const SlurmOptions& options,
                                    const BatchRequest& batch);

/// Where the default template is: $DLSWEEP_TEMPLATE_DIR, then <exe>/../share/dlsweep/
/// templates (installed layout), then the source tree this binary was built from.
Result<std::filesystem::path> find_default_template();
/// Reads options.template_path, or the default template.
Result<std::string> load_template(const SlurmOptions& options);

inline constexpr const char* kTemplateFile = "slurm_batch.sh.mustache";

}  // namespace dlsweep::sched::slurm
