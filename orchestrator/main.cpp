// main.cpp — the `dlsweep` command line: parses arguments (CLI11) and dispatches to the
// verbs in commands.hpp. The one catch of the program lives here.
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <system_error>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "orchestrator/error_printer.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/db_path.hpp"

using namespace dlsweep::orch;

int main(int argc, char** argv) try {
  CLI::App app{"dlsweep — find the large-batch training schedule that reaches your target fastest"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("dlsweep ") + DLSWEEP_VERSION);
  const char* env_db = std::getenv("DLSWEEP_DB");
  std::string db = env_db && *env_db ? env_db : "dlsweep.db";
  auto* db_option = app.add_option("--db", db, "SQLite database (default: $DLSWEEP_DB or ./dlsweep.db)");
  app.footer(
      "Exit codes: 0 ok, 1 runtime failure (database/disk/backend), 2 bad arguments or study,\n"
      "3 submit/resume: no trial completed, best: no COMPLETE trial to pick, 70 internal error, 75 detached (--detach-on-term; trials run on),\n"
      "130 interrupted (trials cancelled).\n"
      "Documentation: the user guide in docs/ of the source tree (installed in share/doc/dlsweep;\n"
      "`mkdocs serve` shows it as a website); every verb's options: docs/reference/cli.md, man dlsweep.");

  SubmitArgs submit;
  auto* s = app.add_subcommand("submit", "validate a study file, record it, and drive the sweep to its end");
  s->add_option("study", submit.study_file, "study file (.yaml, .yml or .json)")->required();
  s->add_flag("--as-job", submit.as_job, "run the orchestrator itself as a Slurm job (login nodes kill long processes)");
  s->add_flag("--dry-run", submit.dry_run, "write the batch scripts / command lines and say where; submit nothing");
  const char* detach_help =
      "on SIGTERM, leave the Slurm jobs running and exit 75 (`dlsweep resume` follows them) instead of "
      "cancelling them; what the orchestrator job of --as-job does";
  s->add_flag("--detach-on-term", submit.detach_on_term, detach_help);
  s->add_flag("--replace", submit.replace,
              "if the database holds a study of this name, delete it first (its rows and its runs directory, as "
              "`dlsweep delete --files --yes`), after the new study file is validated; then submit");

  StatusArgs status;
  auto* st = app.add_subcommand("status", "studies and their trial counts by state (read-only)");
  st->add_option("study", status.study, "show one study's trials");
  st->add_option("--format", status.format, "table | csv | json")->check(CLI::IsMember({"table", "csv", "json"}));

  ResultsArgs results;
  auto* r = app.add_subcommand("results", "per-trial params, state, objective value, time-to-target (read-only)");
  r->add_option("study", results.study, "study name")->required();
  r->add_option("--format", results.format, "table | csv | json (parquet: not available; says why)")
      ->check(CLI::IsMember({"table", "csv", "json", "parquet"}));

  QueryArgs query;
  auto* q = app.add_subcommand("query", "run one read-only SQL statement against the database");
  q->add_option("sql", query.sql, "one SELECT statement (writes are refused)")->required();
  q->add_option("--format", query.format, "table | csv | json")->check(CLI::IsMember({"table", "csv", "json"}));

  BestArgs best;
  auto* b = app.add_subcommand("best", "the best schedule of a study by its objective, and why (read-only)");
  b->add_option("study", best.study, "study name")->required();
  b->add_option("--by", best.by, "auto | time | steps | value")->check(CLI::IsMember({"auto", "time", "steps", "value"}));
  b->add_option("--format", best.format, "table | json")->check(CLI::IsMember({"table", "json"}));
  b->add_option("--write-schedule", best.write_schedule,
                "pbt studies: write the winner's schedule as a study file that replays it as one fixed trial; "
                "branching studies: the batch schedule that follows the critical batch, as one fixed dlsweep-train trial");
  b->add_flag("--explain", best.explain,
              "the evidence: regime, B_crit with interval, runner-ups within seed noise, speedups, exclusions");
  b->add_option("--group-by", best.group_by,
                "fit S(B) and B_crit per value of this parameter (e.g. optimizer, lr_rule), side by side with "
                "their intervals; implies --explain");

  PlanArgs plan;
  auto* pl = app.add_subcommand("plan", "predicted best batch and time to target per rank count (a model prediction)");
  pl->add_option("study", plan.study, "study name")->required();
  pl->add_option("--ranks", plan.ranks, "rank counts to plan for, e.g. 1,2,8,64")->delimiter(',')->check(CLI::PositiveNumber);
  pl->add_option("--format", plan.format, "table | json")->check(CLI::IsMember({"table", "json"}));

  ResumeArgs resume;
  auto* rs = app.add_subcommand("resume", "continue a sweep whose orchestrator stopped or died");
  rs->add_option("study", resume.study, "study name")->required();
  rs->add_flag("--detach-on-term", resume.detach_on_term, detach_help);
  rs->add_option("--rerun", resume.rerun,
                 "cancelled, failed or cancelled,failed: run those trials again with their same params (a new "
                 "attempt each; e.g. the holes Ctrl-C left in a grid)");
  auto* add_trials = rs->add_option(
      "--add-trials", resume.add_trials,
      "grow the study's trial budget (search.trials) by N and run N more trials, numbered after the last; also on "
      "a FINISHED study (random, qmc, tpe; a grid only up to its size)");
  rs->add_option("--relocate", resume.relocate,
                 "OLD=NEW: the project moved or was copied from directory OLD to NEW; every stored path of the study "
                 "under OLD (runs and trial directories, the study file, paths in the command) is re-rooted under NEW "
                 "first (a move the database can see is followed without it; a copy needs it)");
  rs->add_flag("--as-job", resume.as_job,
               "run the resumed orchestrator as a Slurm job (after `scancel` of an --as-job orchestrator, or from a "
               "login node); --add-trials and --relocate are applied here first");

  EnqueueArgs enqueue;
  auto* eq = app.add_subcommand("enqueue",
                                "ask for a trial with these values (the rest sampled); it runs before the sampled "
                                "trials, at the running orchestrator's next turn or the next resume");
  eq->add_option("study", enqueue.study, "study name")->required();
  eq->add_option("--set", enqueue.sets, "NAME=VALUE, one parameter of the study's space (repeatable)")
      ->allow_extra_args(false);

  CancelArgs cancel;
  auto* c = app.add_subcommand("cancel", "cancel a study's unfinished trials (or some of them) and record it");
  c->add_option("study", cancel.study, "study name")->required();
  c->add_option("--trial", cancel.trials, "trial number (repeatable); default: every unfinished trial");

  DeleteArgs del;
  auto* d = app.add_subcommand("delete",
                               "remove a study from the database (every row of it, in one transaction) and, with "
                               "--files, its runs directory; asks first");
  d->add_option("study", del.study, "study name")->required();
  d->add_flag("--files", del.files,
              "also remove <runs_dir>/<study> (only when provably that study's directory)");
  d->add_flag("-y,--yes", del.yes, "do not ask; needed when standard input is not a terminal");
  d->footer("Refuses, deleting nothing, while an orchestrator drives the database (exit 1), for an unknown study,\n"
            "live (QUEUED/RUNNING) trials, a directory it cannot prove is the study's, or no confirmation (exit 2).\n"
            "Each deletion is printed and logged in <runs_dir>/dlsweep-deletions.log.");

  ReportArgs report;
  auto* rp = app.add_subcommand("report", "one self-contained HTML file with the study's charts (read-only; works offline)");
  rp->add_option("study", report.study, "study name")->required();
  rp->add_option("-o,--output", report.output, "where to write it (default STUDY-report.html; - for stdout)");

  ServeArgs serve;
  auto* sv = app.add_subcommand("serve", "the live view: every study of the database in a browser, updating while sweeps run (read-only)");
  sv->add_option("--bind", serve.bind, "address to listen on (default 127.0.0.1: this machine only; docs/report-and-serve.md: the SSH tunnel)");
  sv->add_option("--port", serve.port, "TCP port (default 8080; 0: any free port)");
  sv->add_option("--max-connections", serve.max_connections, "connections served at once; more get 503 (default 256)");
  sv->add_flag("--verbose", serve.verbose, "log every response to stderr");
  auto* sv_token_file = sv->add_option("--token-file", serve.token_file,
                                       "read the secret token from FILE (mode 600) instead of drawing a new one");
  auto* sv_no_token = sv->add_flag("--no-token", serve.no_token,
                                   "serve without a token: anyone who can connect can read every study (warns)");
  sv_no_token->excludes(sv_token_file);
  auto* sv_sock = sv->add_option("--unix-socket", serve.unix_socket,
                                 "listen on this Unix socket (created mode 0600) instead of TCP; forward it with "
                                 "ssh -L 8080:PATH (docs/report-and-serve.md)");
  sv_sock->excludes(sv->get_option("--bind"));
  sv_sock->excludes(sv->get_option("--port"));
  sv->footer("A secret token is drawn at start and printed in the URL (http://127.0.0.1:8080/?token=...);\n"
             "a request without it, or the cookie that URL sets, gets 403.");

  ReplayArgs replay;
  auto* rl = app.add_subcommand("replay",
                                "replay a finished study's recorded curves under another pruner (or sampler), nothing trained: what "
                                "it would have found and at what compute (read-only)");
  rl->add_option("study", replay.study, "study name")->required();
  rl->add_option("--pruner", replay.pruner,
                 "none | median | percentile | threshold | asha | hyperband, or recorded (the study's own pruner; "
                 "the default with --algorithm)");
  rl->add_option("--pruner-option", replay.pruner_options,
                 "KEY=VALUE, one key of a study file's pruner: section (by, warmup, group_by=[a,b], "
                 "reduction_factor, ...; repeatable)")
      ->allow_extra_args(false);
  rl->add_option("--algorithm", replay.algorithm,
                 "also replay a sampler (grid, random, qmc, tpe, gp, cmaes, auto, ...) over a study whose finished "
                 "trials cover a grid: each proposal looked up among them (off the grid: the nearest point)");
  rl->add_option("--algorithm-option", replay.algorithm_options,
                 "KEY=VALUE, one key of a study file's search: section for --algorithm (repeatable; default: the "
                 "study's own when it is the same algorithm)")
      ->allow_extra_args(false);
  rl->add_option("--seed", replay.seed, "--algorithm's seed (default: the study's search.seed)");
  rl->add_option("--trials", replay.trials, "--algorithm's proposals (default: as many as the study's finished trials)")
      ->check(CLI::PositiveNumber);
  rl->add_option("--compute", replay.compute,
                 "what compute is measured in: auto (wall_s where every trial reports it, else samples, else step) | "
                 "wall_s | samples | step | epoch")
      ->check(CLI::IsMember({"auto", "wall_s", "samples", "step", "epoch"}));
  rl->add_option("--format", replay.format, "table | json")->check(CLI::IsMember({"table", "json"}));

  for (auto* sub : {s, st, r, q, b, pl, rs, c, rp, sv, eq, d, rl}) sub->fallthrough();

  ExportArgs exp;
  auto* ex = app.add_subcommand("export", "a study as CSV for pandas/polars: one row per trial, or --curves (read-only)");
  ex->add_option("study", exp.study, "study name")->required();
  ex->add_option("--format", exp.format, "csv (parquet: not available, no Debian-packaged library; says why)");
  ex->add_flag("--curves", exp.curves, "long-form curves: trial, attempt, seq, kind, step, epoch, samples, wall_s, metric, value");
  ex->add_option("-o,--output", exp.output, "write to this file (default: stdout)");
  ex->fallthrough();

  WorkerArgs worker;
  auto* wk = app.add_subcommand("worker",
                                "run trials handed out through a pilot pool (what `backend: {kind: slurm, workers: N}` "
                                "starts in each allocation; not for use by hand)");
  wk->add_option("--pool", worker.pool, "the study's pool directory (<runs_dir>/<study>/slurm/pool)")->required();
  wk->add_option("--id", worker.id, "this worker's name (w1, w2, ...)")->required();
  wk->add_option("--ranks", worker.ranks, "tasks of this allocation (default: $SLURM_NTASKS, else 1)");
  wk->add_option("--time-limit-min", worker.time_limit_min, "the allocation's time limit in minutes (0: unknown)");
  wk->add_option("--margin-s", worker.margin_s, "a trial must end this long before the allocation does (default 30)");
  wk->add_option("--idle-s", worker.idle_s, "exit after this long with nothing to run (default 120)");
  // `dlsweep` alone: the help (what a new user types first), not "A subcommand is required".
  if (argc == 1) {
    app.name("dlsweep");
    std::fputs(app.help().c_str(), stdout);
    return exit_code::ok;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? exit_code::ok : exit_code::usage;
  }
  // One check of --db for every verb, before any of them opens or locks anything. A dry run
  // never touches the database, so it is not held to it.
  if (!(*s && submit.dry_run) && !*wk) {
    // A path from $DLSWEEP_DB is named so: the user typed no --db to look for.
    const bool from_env = db_option->count() == 0 && env_db && *env_db;
    if (auto ok = check_db_path(db, from_env ? "$DLSWEEP_DB" : "--db"); !ok) {
      return print_error(ok.error(), exit_code::usage);
    }
  }
  submit.db = status.db = results.db = query.db = best.db = resume.db = cancel.db = enqueue.db = del.db = db;
  replay.db = db;
  resume.add_trials_given = add_trials->count() > 0;
  exp.db = db;
  plan.db = db;
  report.db = db;
  serve.db = db;
  if (*s || *rs) {
    // A sweep outlives its terminal: a closed pipe (`submit | head`) or a hung-up ssh
    // session must not kill the orchestrator mid-write (Progress drops the output; the
    // study's orchestrator.log keeps it). Trials get default dispositions (process_spawn).
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGHUP, SIG_IGN);
  }
  if (*s) return cmd_submit(submit);
  if (*st) return cmd_status(status);
  if (*r) return cmd_results(results);
  if (*q) return cmd_query(query);
  if (*b) return cmd_best(best);
  if (*pl) return cmd_plan(plan);
  if (*rs) return cmd_resume(resume);
  if (*c) return cmd_cancel(cancel);
  if (*d) return cmd_delete(del);
  if (*eq) return cmd_enqueue(enqueue);
  if (*ex) return cmd_export(exp);
  if (*rp) return cmd_report(report);
  if (*sv) return cmd_serve(serve);
  if (*rl) return cmd_replay(replay);
  if (*wk) return cmd_worker(worker);
  return exit_code::usage;
} catch (const std::system_error& e) {
  // The reader of our output went away (`dlsweep ... 2>&1 | head -1`): fmt::print throws
  // EPIPE where SIGPIPE is ignored (submit, resume: a sweep outlives its terminal). The
  // reader has what it wanted: end quietly, with the status SIGPIPE would have given.
  if (e.code() == std::errc::broken_pipe) return 128 + SIGPIPE;
  std::fprintf(stderr, "dlsweep: internal error: %s (please report this)\n", e.what());  // never throws
  return exit_code::internal;
} catch (const std::exception& e) {
  std::fprintf(stderr, "dlsweep: internal error: %s (please report this)\n", e.what());  // never throws
  return exit_code::internal;
}
