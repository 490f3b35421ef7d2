// engine.hpp — the sweep engine: one Boost.Asio event loop that asks the sampler for
// params, writes each trial (params first: write-ahead) before launching it on the
// backend, turns the backend's job events into state-machine transitions, tails every
// live trial's metrics.jsonl into the database, and ends when the study is done.
//
// Layout: the decisions are pure functions in their own files — next_state()
// (state_machine.hpp), decide_terminal() (trial_outcome.hpp), decide_prune()
// (prune_policy.hpp), TrialCurve::add() (trial_curve.hpp), parse_cancel_request()
// (cancel_request.hpp) — and the engine carries out their side effects: engine.cpp holds
// the lifecycle (run, fill, launch, interrupt, done), engine_events.cpp the job events,
// transitions, ingestion and pruning, engine_restore.cpp `dlsweep resume`,
// engine_enqueue.cpp the trials asked for with `dlsweep enqueue`, engine_pbt.cpp population-based
// training (a member's next interval is a new trial: its link, its parent's checkpoints, its end).
//
// Invariants:
//  - The engine is the only writer of the database; every state change goes through
//    next_state() and Storage::transition (all-or-nothing, with its event row).
//  - The writes of one event-loop turn share one transaction (a Storage write batch,
//    opened by db() and committed by a handler posted behind the turn's), and the batch is
//    committed before every submit: a trial's params and WAITING row are durable before
//    its job exists, and a kill -9 loses at most the turn it interrupts — what a kill a
//    moment earlier would have lost.
//  - A trial is never launched twice for the same attempt: launch happens only from
//    WAITING, and the WAITING->QUEUED transition is recorded right after submit succeeds.
//  - Never more than backend.max_concurrent trials are queued or running.
//  - Enqueued trials (`dlsweep enqueue`) are created before any sampled one, in the order
//    they were asked for, and count against the trial budget like any trial (Optuna's
//    semantics); one that finds the budget used up waits in the database for `resume
//    --add-trials`. A request becomes its trial in the trial's own transaction.
//  - Anything done for one live trial may end another (a cancel the backend answers at
//    once, a stop, a fatal error): the live trials are one LiveTrials (live_trials.hpp),
//    whose walks skip what ended meanwhile and whose ended trials stay valid to the end of
//    the turn, and a backend event delivered from inside submit()/cancel()/adopt() (against
//    the backend contract) is handled in a turn of its own.
//  - On interrupt (Ctrl-C / SIGTERM) no new trial starts, every live job is cancelled and
//    waited for, and every unfinished trial ends CANCELLED before run() returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/asio.hpp"
#include "common/jsonl_tail.hpp"
#include "db/storage.hpp"
#include "engine/cancel_request.hpp"
#include "engine/engine_clock.hpp"
#include "engine/live_trials.hpp"
#include "engine/pbt_lineage.hpp"
#include "engine/progress.hpp"
#include "engine/prune_policy.hpp"
#include "engine/search_parts.hpp"
#include "engine/state_machine.hpp"
#include "study/spec.hpp"
#include "engine/trial_curve.hpp"
#include "engine/trial_watch.hpp"
#include "schedulers/backend.hpp"
#include "search/discovered.hpp"
#include "search/sampler.hpp"

namespace dlsweep::orch {

struct EngineOptions {
  std::filesystem::path train_binary;  ///< dlsweep-train, for embedded-trainer studies
  std::filesystem::path runs_dir;      ///< absolute: trial dirs are runs_dir/<study>/trial-NNNN
  double tick_s = 0.5;                 ///< metric ingestion / progress period
  /// The engine's time (engine_clock.hpp): its tick and the pending/elapsed times. nullptr:
  /// real time on the io_context. Tests pass a clock they step (tests/support/manual_clock.hpp).
  std::shared_ptr<EngineClock> clock;
  bool handle_signals = true;          ///< SIGINT/SIGTERM interrupt the sweep
  /// Read a trial's new records the moment they are written (inotify, trial_watch.hpp);
  /// false: on ticks only.
  bool watch_files = inotify_wanted();
  /// SIGTERM detaches instead of interrupting when the backend's jobs outlive the
  /// orchestrator: live jobs keep running, trial states stay as they are, run() returns
  /// with `detached`, and `dlsweep resume` follows the jobs later. For the orchestrator
  /// running as a Slurm job, whose SIGTERM means preemption, requeue or its own time
  /// limit — not that the user wants the sweep stopped (SIGINT still interrupts). USR2
  /// (that job's time-limit warning) then detaches too: its batch script requeues it.
  bool detach_on_sigterm = false;
  /// After SIGINT/SIGTERM, how long to wait for the jobs of a backend whose jobs outlive
  /// the orchestrator (Slurm) to be confirmed ended before exiting anyway: their cancels
  /// are sent (or in flight), their trials are recorded CANCELLED, and `resume` cancels
  /// any job of theirs still on the scheduler. A second signal exits at once. Local jobs are the
  /// orchestrator's children: it always waits for them (their own kill grace bounds it).
  double shutdown_wait_s = 5;
  /// `resume --rerun cancelled,failed`: restore() runs the trials in these states again
  /// with their same params, as a new attempt (a `rerun` transition each).
  std::set<TrialState> rerun;
};

struct SweepOutcome {
  bool interrupted = false;
  bool detached = false;  ///< see EngineOptions::detach_on_sigterm
  SweepSnapshot snapshot;
  /// Why trials failed (the short phrase, e.g. "exit code 1: ModuleNotFoundError: ...")
  /// and how many trials (not attempts) it was, in the order first seen: the summary says
  /// so when nothing completed. A trial counts under the reason of its latest failure.
  std::vector<std::pair<std::string, int>> failure_reasons;
  /// trial.fail_fast stopped the sweep: why (empty otherwise). Trials not launched stay
  /// WAITING, live ones were cancelled.
  std::string failed_fast;
  /// The fix for `failed_fast` when the sweep stopped for another reason than failing trials
  /// (a study parameter the program never read); empty: fail_fast's own fix.
  std::string stop_fix;
};

class Engine {
 public:
  /// `parts`: the study's sampler, pruner and budget (make_search_parts), built once by
  /// the caller.
  Engine(boost::asio::io_context& io, db::Storage& storage, sched::Backend& backend, const StudySpec& spec,
         SearchParts parts, std::int64_t study_id, EngineOptions options, Progress& progress);
  /// Commits what is left of the write batch.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Drives the sweep to its end. Errors are database or disk failures that make going on
  /// unsafe; trial failures are not errors.
  Result<SweepOutcome> run();

  /// Picks up a study whose orchestrator stopped or died (`dlsweep resume`); call before
  /// run(). WAITING trials are launched; FAILED ones with retries left are retried; new
  /// trials continue after the highest trial number. QUEUED/RUNNING trials: on a backend
  /// whose jobs outlive the orchestrator (Slurm) the job is followed again — found on the
  /// scheduler by its token, else by the native id in `jobs` — and jobs of the study that
  /// belong to no live trial are cancelled; otherwise (or if no job is known) the trial is
  /// requeued for the same attempt (the caller has made sure its old process is gone) and
  /// resumes from its checkpoint.
  Status restore(const std::vector<db::TrialRow>& trials, const std::vector<db::TrialSummary>& summaries,
                 const std::vector<db::JobRow>& jobs);

  /// What restore() did with the live trials, for the resume message.
  struct RestoreCounts {
    std::size_t adopted = 0, requeued = 0, retried = 0, strays_cancelled = 0, rerun = 0;
    std::size_t finished = 0;  ///< live trials whose attempt had finished (final record on disk)
  };
  const RestoreCounts& restore_counts() const { return restored_; }

  /// Stop creating trials and cancel the live ones (what Ctrl-C does).
  void interrupt(const std::string& why);

  /// What SIGINT, SIGTERM or SIGUSR2 does (EngineOptions::handle_signals delivers them here):
  /// interrupt (or detach, with detach_on_sigterm), and run() returns once the live trials
  /// have ended — within shutdown_wait_s for jobs that outlive the orchestrator — whatever
  /// the backend still has pending. A second SIGINT/SIGTERM stops waiting at once.
  void on_signal(int sig);

 private:
  /// What the engine keeps of a live trial (live_trials.hpp).
  using Live = LiveTrial;

  /// The storage, for a write: opens this turn's write batch if none is open.
  db::Storage& db();
  /// Commits the open write batch (a failure is fatal()).
  void flush();
  void wait_for_signal();
  /// Ends the event loop at once, leaving live jobs running (detach_on_sigterm); `why`
  /// names the signal.
  void detach(const std::string& why);
  void fill();
  /// Creates trial `number` and launches it; `enqueued_id`: it is that enqueued request.
  Status create_next(std::int64_t number, const search::Params& params,
                     std::optional<std::int64_t> enqueued_id = std::nullopt);
  /// The next enqueued request as trial next_number_: its fixed values over the sampler's
  /// proposal (search::merge_enqueued).
  Status create_enqueued();
  /// run(): the study's waiting enqueued requests, and any request files left unrecorded.
  Status load_enqueued();
  /// Each tick: records the request files `dlsweep enqueue` left for this orchestrator.
  void check_enqueue_requests();
  void launch(std::int64_t trial_id);
  void on_job_event(const sched::JobEvent& ev);
  void on_terminal(Live& live, const sched::JobEvent& ev);
  /// The trial's launch could not be recorded (the database failed and fatal() is stopping
  /// the sweep): nothing may stay live without a job that ends, or the sweep never does.
  void abandon_launch(Live& live, const Result<std::string>& submitted);
  void tick();
  void check_cancel_request();
  /// After an interrupt: stop waiting for jobs that outlive the orchestrator (now, or after
  /// shutdown_wait_s); the trials keep the states the database has for them.
  void arm_shutdown_wait();
  void stop_waiting(const std::string& why);
  /// The sweep's loop is over: no more ticks, waits, file watches or signals; `stop_io`: the
  /// io_context stops now too (detach, stop_waiting: jobs and calls may still be in flight).
  void end_loop(bool stop_io);
  /// Each tick: the site limit the backend learned, said once (progress, events table).
  void check_capacity();
  /// The backend accepted a WAITING trial's job (its first event): the trial is QUEUED.
  void note_accepted(Live& live, const sched::JobEvent& ev);
  void record_job(const sched::JobEvent& ev, const std::string& state);
  /// A `pending` event: the reason goes to the jobs table, a notable one to the terminal;
  /// the pending clock stops while the study's own throttle holds the job.
  void on_pending(Live& live, const sched::JobEvent& ev);
  /// The job is (again) in the scheduler's queue (`queued`, `requeued`) or leaves it
  /// (`started`): the pending clock and reason follow.
  void note_queued(Live& live, bool queued);
  /// Each tick: backend.pending_warn's one warning per trial that waits too long.
  void check_pending();
  /// Reads the trial's new records into the database; `may_prune`: then asks the pruner.
  void ingest(Live& live, bool may_prune = true);
  void ingest_batch(Live& live, bool may_prune);
  /// Define-by-run (engine_suggest.cpp): answers the program's new suggest.jsonl requests in
  /// suggested.json — the study's declaration, the trial's stored value, or a draw recorded in
  /// the trial's params.
  void serve_suggests(Live& live);
  /// One request's answer: {"value": v} or {"error": why}.
  nlohmann::json answer_suggest(Live& live, const std::string& name, const nlohmann::json& distribution);
  /// The distributions of the study's discovered parameters (first asker's), from its events.
  std::map<std::string, search::Distribution> discovered_;
  bool discovered_loaded_ = false;
  /// A completed trial whose program (dlsweep_trial) never read a study parameter: stop the sweep.
  void check_unread_params(const Live& live);
  /// Stops launching (as fail_fast does) with `why` and its fix.
  void stop_sweep(const std::string& why, const std::string& fix);
  /// The study's pruner on a live trial's curve (decide_prune) after its reports from
  /// index `first_new` on; asks the trial to stop if it falls behind.
  void maybe_prune(Live& live, std::size_t first_new);
  /// objective.stop_at_target: asks a trial that has reached the target to stop (it ends
  /// COMPLETE). True when the trial is (now or already) asked to stop, so no pruning.
  bool maybe_stop_at_target(Live& live);
  /// Applies one state-machine event to a live (or waiting) trial and records it.
  bool apply(db::TrialRow& row, TrialEvent ev, const std::string& reason, std::optional<int> exit_code = {});
  void finish_trial(std::int64_t trial_id);
  /// Takes the trial out of live_ (nullptr if it was not there); the object stays valid to
  /// the end of this turn: a handler posted behind it frees it.
  Live* retire_live(std::int64_t trial_id);
  /// The backend's calls. An event a backend delivers from inside one of them (the contract
  /// in schedulers/backend.hpp says it posts them) is handled in a turn of its own, never
  /// in the middle of what the engine was doing when it called.
  Result<std::string> submit_job(const sched::JobSpec& job);
  void cancel_job(const std::string& job_id);
  Result<std::string> adopt_job(const sched::JobSpec& job, const std::string& native_id);
  /// The backend's event handler (set in run()).
  void on_backend_event(const sched::JobEvent& ev);
  /// The snapshot counter of trials in state `st`.
  static std::int64_t& count_of(SweepSnapshot& s, TrialState st);
  /// restore(): follow `native_id` as the job of `row` (live, same attempt). False if the
  /// backend refused it (the caller requeues instead).
  /// `over`: the scheduler lists the job as ended already (its end is taken from there).
  bool adopt(const db::TrialRow& row, const std::string& native_id, const std::string& state_word, bool over = false);
  /// The stop the previous orchestrator asked of the trial (control.json), as its own ask.
  void take_previous_ask(Live& live);
  /// restore(): a live trial whose attempt finished unwatched (final record on disk) ends
  /// from its files as a clean exit — COMPLETE, or the state of an ask — never relaunched.
  /// `stop_reason`: the ask it ended by when it wrote no final record (a PBT interval's end);
  /// empty: the previous orchestrator's ask, if any.
  void finish_from_disk(const db::TrialRow& row, const std::string& stop_reason = {});
  /// The progress line's best: `value` of COMPLETE trial `number` if it is better and
  /// feasible (`constraints`, Optuna's convention: every entry <= 0).
  void note_best(std::int64_t number, const std::optional<double>& value, const std::vector<double>& constraints);
  /// An adopted job was lost: the trial goes back to WAITING's queue for the same attempt.
  void requeue_adopted(Live& live, const std::string& why);
  void check_done();
  void fatal(const Error& e);
  SweepSnapshot snapshot() const;
  double elapsed_s() const;
  /// Records why trial `number` failed (its latest reason counts, once per trial).
  void note_failure(std::int64_t number, const std::string& why);
  /// trial.fail_fast: counts a failure by failure_signature (its phrase, and its last stderr
  /// line without the trial's own paths and numbers); stops the sweep when
  /// fail_fast trials failed the same way before any completed.
  void check_fail_fast(std::int64_t number, const std::string& failure, const std::string& last_stderr_line);
  /// Stops launching and cancels the live trials; the sweep ends with `failed_fast`.
  void fail_fast(const std::string& why);
  /// The first evaluation of a live trial lacked the objective: it can never count.
  void stop_no_objective(Live& live);

  // Population-based training (engine_pbt.cpp); each a no-op for other samplers.
  bool pbt() const;
  /// The sampler can decide trial next_number_ (pbt: the previous generation has finished);
  /// false: fill() creates nothing now and asks again when a trial ends.
  bool pbt_ready();
  /// Before trial `number` is created: its link, dlsweep-train's schedule params added to
  /// `params`, its parent's checkpoints copied into its trial directory.
  Status pbt_prepare(std::int64_t number, search::Params& params);
  /// The trial's `pbt` event (in its creation's batch) and its progress line.
  void pbt_record(std::int64_t trial_id, std::int64_t number);
  /// `auto`: records (a `search` event, common/search_choice.hpp) and logs the algorithm that
  /// proposes trial `number` when it differs from the one before (engine_search_choice.cpp).
  void note_search_choice(std::int64_t number);
  std::string search_choice_;  ///< the algorithm auto used last ("" before its first proposal)
  /// DLSWEEP_STOP_AT for the trial's job.
  void pbt_env(std::int64_t number, sched::JobSpec& job) const;
  /// Asks a live trial whose reported position reached its interval's end to stop; true when asked.
  bool pbt_stop_at_end(Live& live);
  /// restore(): the links recorded by earlier runs (their `pbt` events).
  Status pbt_restore();
  /// A branching study resumed: the first trial whose stored link differs from the one this
  /// sampler derives (a study made by a dlsweep that planned otherwise), as the line to print.
  std::optional<std::string> branch_plan_mismatch() const;
  /// restore(): a live PBT trial whose records on disk already reach its interval's end
  /// (the program stopped there, as DLSWEEP_STOP_AT asks, while no orchestrator watched):
  /// it ends COMPLETE from its files like a watched one, never relaunched — a relaunch would
  /// resume from the interval-end checkpoint and train past the interval. False otherwise.
  bool pbt_finished_on_disk(const db::TrialRow& row);
  /// What params.json holds for `params` (the database's): the same, but for dlsweep-train
  /// in a pbt study, whose batch_size must be where its batch_ramp starts (pbt_params_file).
  nlohmann::json params_file(const nlohmann::json& params) const;

  boost::asio::io_context& io_;
  db::Storage& storage_;
  sched::Backend& backend_;
  const StudySpec& spec_;
  std::int64_t study_id_;
  EngineOptions options_;
  Progress& progress_;
  std::unique_ptr<search::Sampler> sampler_;
  std::unique_ptr<search::Pruner> pruner_;  ///< the study's pruner (NonePruner for none)
  std::int64_t total_ = -1;                 ///< the trial budget (SearchParts::budget)
  std::shared_ptr<EngineClock> clock_;  ///< options_.clock, or real time (AsioEngineClock)
  boost::asio::signal_set signals_;
  boost::asio::steady_timer shutdown_timer_;
  std::string capacity_note_;  ///< the site limit last said (check_capacity)
  std::string interrupt_why_;  ///< the first interrupt's reason ("terminated (SIGTERM)")
  TrialWatch watch_;  ///< wakes ingest() when a live trial's metrics.jsonl changes
  EngineClock::time_point start_;
  std::int64_t done_at_start_ = 0;  ///< trials done when run() began (SweepSnapshot::done_before)

  /// Trials with a job (QUEUED/RUNNING, or WAITING until its first event): walked with
  /// for_each, ended with retire_live (live_trials.hpp: no walk is ever invalidated).
  LiveTrials live_;
  bool release_posted_ = false;  ///< a handler freeing live_'s retired trials is queued
  int in_backend_call_ = 0;      ///< inside the backend's submit()/cancel()/adopt()
  std::deque<db::TrialRow> waiting_;             ///< WAITING (or requeued QUEUED) trials to launch
  std::deque<db::EnqueuedRow> enqueued_;         ///< requests waiting to become trials, oldest first
  /// Every trial created, with its status, value and current attempt's curve: what the
  /// sampler and the pruner see.
  search::History history_;
  std::map<std::int64_t, std::size_t> history_index_;  ///< trial id -> index in history_.trials
  /// The history record of a trial id, if any.
  search::TrialRecord* history_of(std::int64_t trial_id);
  std::int64_t next_number_ = 0;
  bool exhausted_ = false;
  bool interrupted_ = false;
  bool detached_ = false;
  bool done_ = false;
  std::optional<Error> fatal_;
  SweepSnapshot counts_;
  RestoreCounts restored_;
  std::map<std::int64_t, std::string> last_failure_;   ///< trial number -> its latest failure phrase
  std::vector<std::string> failure_order_;              ///< failure phrases, first seen first
  std::map<std::string, std::set<std::int64_t>> same_failures_;  ///< fail_fast: key -> trial numbers
  std::string failed_fast_;                             ///< why fail_fast stopped the sweep
  std::string stop_fix_;                                ///< stop_sweep's fix (empty for fail_fast)
  CurveAxis axis_;  ///< the objective and the pruning axis, for TrialCurve::add
  PbtLinks pbt_links_;                 ///< pbt: every trial's link, by number
  std::int64_t pbt_waiting_for_ = -1;  ///< pbt: the generation last said to wait
  bool branch_plan_checked_ = false;   ///< branch: the stored links compared with the plan once
};

}  // namespace dlsweep::orch
