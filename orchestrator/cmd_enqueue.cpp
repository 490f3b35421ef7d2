// cmd_enqueue.cpp — `dlsweep enqueue STUDY --set NAME=VALUE ...` (Optuna's enqueue_trial):
// ask for a trial with these values; the parameters not given are sampled as usual.
//
// Everything is checked before anything is written: the --set syntax, the study, whether it
// takes enqueued trials (not a grid), and each value against the study's stored space
// (enqueue_values.hpp). Then, told apart by the study's lock like `cancel`:
//  - no orchestrator drives the study: the command records the request itself (one
//    transaction with its event); it runs first at the next `dlsweep resume`;
//  - one does: it is the study's only writer, so the command leaves a request file
//    (enqueue_request.hpp) that the orchestrator records on its next tick and runs before
//    its next sampled trial. The command waits until the file is taken; if the
//    orchestrator exits first, the command takes the lock and records the request itself.
//    (If the database's lock is held exclusively by the orchestrator of another study — a
//    database in snapshot mode takes one at a time — the file waits for this study's next
//    resume, which records it first.)
// An enqueued trial counts against the study's trial budget (search.trials), as in Optuna;
// when the budget is used up the command says how to grow it (`resume --add-trials`).
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "db/storage.hpp"
#include "search/discovered.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/commands.hpp"
#include "engine/enqueue_request.hpp"
#include "study/enqueue_values.hpp"
#include "engine/progress.hpp"
#include "study/growth.hpp"
#include "db/orchestrator_lock.hpp"
#include "orchestrator/relocation.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

int refuse(const Errors& errors, int code) { return print_errors(errors, code, "nothing was enqueued."); }

int refuse(const Error& e, int code) { return refuse(Errors{e}, code); }

// Where the request stands against the study's trial budget, for the user.
void print_standing(const db::Storage& storage, const db::StudyRow& study, const StudySpec& spec,
                    const std::string& request, const EnqueueArgs& a) {
  auto trials = storage.list_trials(study.id);
  auto requests = storage.list_enqueued(study.id);
  if (!trials || !requests) return;
  std::int64_t created = 0, waiting = 0;
  for (const auto& t : *trials) created = std::max(created, t.number + 1);
  for (const auto& r : *requests) {
    if (r.request == request && r.trial_id) {
      for (const auto& t : *trials)
        if (t.id == *r.trial_id) fmt::print(stderr, "it is trial {} of study {}\n", t.number, a.study);
      return;
    }
    if (!r.trial_id) ++waiting;
  }
  const std::int64_t budget = trial_budget(spec);
  const std::int64_t room = std::max<std::int64_t>(0, budget - created);
  if (budget >= 0 && waiting > room) {
    const std::int64_t short_by = waiting - room;
    fmt::print(stderr,
               "note: the study's budget is {} (search.trials) and {} exist, so {} of the {} enqueued trial{} "
               "wait{} for room: `dlsweep --db {} resume {} --add-trials {}` runs {}\n",
               trials_word(budget), created, short_by, waiting, waiting == 1 ? "" : "s", short_by == 1 ? "s" : "",
               a.db, a.study, short_by, short_by == 1 ? "it" : "them");
    return;
  }
  fmt::print(stderr, "{} enqueued {}; {} before any sampled trial ({})\n", waiting,
             waiting == 1 ? "trial waits" : "trials wait", waiting == 1 ? "it runs" : "they run",
             budget >= 0 ? fmt::format("budget: {} of {} created", created, trials_word(budget))
                         : fmt::format("{} created", created));
}

// The lock is ours: records the request files an orchestrator left unrecorded (they were
// made before this one), then `params` if given.
Status record_here(db::Storage& storage, const db::StudyRow& study, const StudySpec& spec,
                   const std::optional<std::pair<std::string, search::Params>>& ours) {
  auto left = read_enqueue_requests(study.root_dir, spec);
  auto recorded = record_enqueue_requests(storage, study.id, left);
  if (!recorded) return std::unexpected(recorded.error());
  for (const auto& r : left) retire_enqueue_request(r);
  if (ours)
    if (auto row = storage.enqueue_trial(study.id, ours->first, ours->second, "user"); !row)
      return std::unexpected(row.error());
  return {};
}

}  // namespace

int cmd_enqueue(const EnqueueArgs& a) {
  // The syntax needs no database: refuse it before opening anything.
  if (a.sets.empty())
    return refuse(Error{"nothing to enqueue", "enqueue", "give at least one --set NAME=VALUE, e.g. --set batch_size=4096"},
                  exit_code::usage);
  if (auto sets = parse_set_args(a.sets); !sets) return refuse(sets.error(), exit_code::usage);
  std::error_code ec;
  if (!fs::exists(a.db, ec))
    return refuse(Error{"no such database", a.db, "pass the --db of the study to enqueue into"}, exit_code::usage);

  // The study's lock: free, enqueue records the trial itself (beside any orchestrator of
  // the database's other studies); held, the study's orchestrator is asked to.
  auto lock = db::lock_study(a.db, a.study);
  const bool own = lock.has_value();
  auto storage = own ? db::Storage::open_readwrite(a.db) : db::Storage::open_readonly(a.db);
  if (!storage) return refuse(storage.error(), exit_code::runtime);
  auto row = (*storage)->find_study(a.study);
  if (!row) return refuse(row.error(), exit_code::runtime);
  if (!*row)
    return refuse(Error{fmt::format("no study named '{}'", a.study), a.db,
                        fmt::format("`dlsweep --db {} status` lists the studies", a.db)},
                  exit_code::usage);
  db::StudyRow study = **row;
  // A copied project never hands the original's orchestrator a request (relocation.hpp);
  // after a move the study's files are where the project is now.
  {
    auto trials = (*storage)->list_trials(study.id);
    if (!trials) return refuse(trials.error(), exit_code::runtime);
    auto place = check_study_place(study, *trials, a.db, /*batch_backend=*/false);
    if (!place) return refuse(place.error(), exit_code::usage);
    if (place->reroot)
      if (auto moved = reroot_path(study.root_dir, *place->reroot)) study.root_dir = moved->string();
  }
  auto spec = parse_study(study.spec_json, StudyFormat::json, study.source_path);
  if (!spec) {
    return print_stored_study_errors(spec.error());
  }
  if (auto st = enqueue_supported(*spec, a.study); !st) return refuse(st.error(), exit_code::usage);
  // The parameters trials discovered (suggest_*, a `suggest` event each) may be set too.
  std::vector<std::string> reasons;
  if (auto evs = (*storage)->events(study.id))
    for (const auto& e : *evs)
      if (e.kind == "suggest") reasons.push_back(e.reason);
  auto params = enqueue_params_from_args(search::with_discovered(spec->space, search::discovered_from_events(reasons)),
                                         a.sets);
  if (!params) return refuse(params.error(), exit_code::usage);

  if (own) {
    const std::string request = new_request_id("cli");
    if (auto st = record_here(**storage, study, *spec, std::pair{request, *params}); !st)
      return refuse(st.error(), exit_code::runtime);
    fmt::print(stderr, "enqueued a trial of study {} with {}; it runs first at the next `dlsweep --db {} resume {}`\n",
               a.study, params->dump(), a.db, a.study);
    print_standing(**storage, study, *spec, request, a);
    return exit_code::ok;
  }

  // An orchestrator drives the study: hand it the request and wait until it is taken.
  auto file = write_enqueue_request(study.root_dir, *params);
  if (!file) return refuse(file.error(), exit_code::runtime);
  storage->reset();
  const std::string request = request_id_of(*file);
  fs::path refused = *file;
  refused += ".refused";
  if (study.state != "RUNNING") {
    // The database is held exclusively by an orchestrator of another study (snapshot mode):
    // this one is not running, so nobody takes the file before its next resume (which does, first).
    fmt::print(stderr,
               "an orchestrator of another study holds the database; the request for a trial of study {} with {} "
               "waits in {} and runs first at the next `dlsweep --db {} resume {}`\n",
               a.study, params->dump(), file->string(), a.db, a.study);
    return exit_code::ok;
  }
  fmt::print(stderr, "an orchestrator is driving study {}: asked it to enqueue a trial with {}\n", a.study,
             params->dump());
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!fs::exists(*file, ec)) {
      if (fs::exists(refused, ec))
        return refuse(Error{"the orchestrator refused the request (its log says why)", refused.string(),
                            "check the values against the study with `dlsweep enqueue` again"},
                      exit_code::runtime);
      fmt::print(stderr, "the running orchestrator recorded it: it runs before the study's next sampled trial\n");
      if (auto ro = db::Storage::open_readonly(a.db); ro) print_standing(**ro, study, *spec, request, a);
      return exit_code::ok;
    }
    if (auto l = db::lock_study(a.db, a.study); l) {
      // The orchestrator exited before its next tick: record the request here.
      auto rw = db::Storage::open_readwrite(a.db);
      if (!rw) return refuse(rw.error(), exit_code::runtime);
      if (auto st = record_here(**rw, study, *spec, std::nullopt); !st) return refuse(st.error(), exit_code::runtime);
      fmt::print(stderr, "the orchestrator ended first; recorded the request: it runs first at the next "
                         "`dlsweep --db {} resume {}`\n", a.db, a.study);
      print_standing(**rw, study, *spec, request, a);
      return exit_code::ok;
    }
  }
  fmt::print(stderr,
             "the orchestrator has not taken the request within 60 s; it stays in {} and is recorded by the "
             "orchestrator's next turn or by the next `dlsweep resume {}`\n",
             file->string(), a.study);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
