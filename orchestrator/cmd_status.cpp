// cmd_status.cpp — `dlsweep status [STUDY]`: every study with its trials by state, or one
// study's trials with state, last and best value, and the message (pending reasons too).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/plural.hpp"
#include "common/site_limit_note.hpp"
#include "db/orchestrator_lock.hpp"
#include "db/storage.hpp"
#include "engine/pending_notice.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/cmd_best_pbt.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

using nlohmann::json;

namespace {

// A study recorded RUNNING whose lock (DB.locks/STUDY.lock, db/orchestrator_lock) no
// process holds, as this host sees it: its orchestrator was killed, its node rebooted, or it
// detached, and nothing records its trials until `resume`. Each study has its own
// orchestrator: one that runs says nothing about the others. (An orchestrator holding the
// whole database, DB.lock exclusively — snapshot mode, or a dlsweep from before the lock
// per study —, may drive any of them: then nothing is said.) Said on stderr, once.
void note_undriven(const std::string& db, const std::vector<std::string>& running) {
  if (running.empty()) return;
  if (db::database_lock_state(db, /*exclusive_only=*/true) != db::LockState::free) return;
  std::vector<std::string> undriven;
  for (const auto& n : running)
    if (db::study_lock_state(db, n) == db::LockState::free) undriven.push_back(n);
  if (undriven.empty()) return;
  std::string names;
  for (const auto& n : undriven) names += (names.empty() ? "" : ", ") + n;
  fmt::print(stderr,
             "note: no orchestrator is running on {} for {} (the study's lock in {}.locks/ is free, as this host "
             "sees it): nothing records the trials of {} now; `dlsweep --db {} resume {}` continues {}\n",
             db, names, db, names, db, undriven.size() == 1 ? undriven.front() : "STUDY",
             undriven.size() == 1 ? "it" : "each");
}

}  // namespace

int cmd_status(const StatusArgs& a) {
  auto o = open_for_reading(a.db, a.format);
  if (!o) return print_error(o.error(), exit_code::usage);
  Rows rows;
  std::int64_t warm_count = 0;  // one study: its warm-start trials (search.warm_start)
  std::vector<std::string> running;  // studies recorded RUNNING
  std::vector<std::string> limits;   // what a site limit holds back, for RUNNING studies
  auto note_limit = [&](const db::StudyRow& st) -> Status {
    if (st.state != "RUNNING") return {};
    auto ev = o->storage->latest_event(st.id, kSiteLimitEventKind);
    if (!ev) return std::unexpected(ev.error());
    if (!*ev) return {};
    auto counts = o->storage->state_counts(st.id);
    if (!counts) return std::unexpected(counts.error());
    std::int64_t in = 0, waiting = 0;
    for (auto& [state, c] : *counts) {
      if (state == "QUEUED" || state == "RUNNING") in += c;
      if (state == "WAITING") waiting += c;
    }
    limits.push_back(fmt::format("{}: {}", st.name, site_limit_line((*ev)->reason, in, waiting, (*ev)->who)));
    return {};
  };
  if (a.study.empty()) {
    auto studies = o->storage->list_studies();
    if (!studies) return print_error(studies.error(), exit_code::runtime);
    rows.columns = {"study", "state", "trials", "WAITING", "QUEUED", "RUNNING", "COMPLETE", "PRUNED", "FAILED",
                    "CANCELLED"};
    for (const auto& st : *studies) {
      if (st.state == "RUNNING") running.push_back(st.name);
      if (auto nl = note_limit(st); !nl) return print_error(nl.error(), exit_code::runtime);
      auto counts = o->storage->state_counts(st.id);
      if (!counts) return print_error(counts.error(), exit_code::runtime);
      std::vector<json> row = {st.name, st.state, 0};
      std::int64_t total = 0;
      for (std::size_t i = 3; i < rows.columns.size(); ++i) {
        std::int64_t n = 0;
        for (auto& [state, c] : *counts)
          if (state == rows.columns[i]) n = c;
        total += n;
        row.push_back(n);
      }
      row[2] = total;
      rows.rows.push_back(std::move(row));
    }
  } else {
    auto st = find_study(*o->storage, a.study);
    if (!st) return print_error(st.error(), exit_code::usage);
    if (st->state == "RUNNING") running.push_back(st->name);
    if (auto nl = note_limit(*st); !nl) return print_error(nl.error(), exit_code::runtime);
    auto trials = o->storage->summaries(st->id);
    if (!trials) return print_error(trials.error(), exit_code::runtime);
    // The scheduler's reason why a QUEUED trial's job waits, as the orchestrator last
    // recorded it (pending_notice.hpp): the latest job of the trial's current attempt.
    auto jobs = o->storage->list_jobs(st->id);
    if (!jobs) return print_error(jobs.error(), exit_code::runtime);
    std::map<std::pair<std::int64_t, int>, std::string> job_state;
    for (const auto& j : *jobs) job_state[{j.trial_id, j.attempt}] = j.state;
    // `value`: the objective's last value in the current attempt; `best`: its best so far
    // (what `best --by value` and the progress line's "best" rank by).
    rows.columns = {"trial", "state", "attempt", st->objective_metric, "best", "wall_s", "message"};
    // pbt: each trial's link in its member's lineage (its `pbt` event).
    auto pbt = load_pbt(*o->storage, *st);
    if (!pbt) return print_error(pbt.error(), exit_code::runtime);
    const auto links = *pbt ? pbt_status_cells(**pbt) : std::map<std::int64_t, std::string>{};
    if (*pbt) rows.columns.insert(rows.columns.end() - 1, "pbt");
    for (const auto& t : *trials) {
      std::string message = t.message;
      if (auto js = job_state.find({t.trial_id, t.attempt}); t.state == "QUEUED" && js != job_state.end())
        if (auto why = pending_reason_of(js->second); why && !why->empty()) message = pending_status_message(*why, message);
      rows.rows.push_back({t.number, t.state, t.attempt, opt(t.value), opt(t.best_value), opt(t.wall_s), message});
      if (*pbt) rows.rows.back().insert(rows.rows.back().end() - 1, links.contains(t.number) ? json(links.at(t.number)) : json(nullptr));
    }
    auto warm = o->storage->warm_start_trials(st->id);
    if (!warm) return print_error(warm.error(), exit_code::runtime);
    warm_count = static_cast<std::int64_t>(warm->size());
  }
  fmt::print("{}", render(rows, o->format, output_width(STDOUT_FILENO)));
  if (warm_count > 0 && o->format == OutputFormat::table)
    fmt::print("warm start: {} of earlier studies seed the sampler (not run; `dlsweep results` lists them as WARM)\n",
               trials_word(warm_count));
  if (o->format == OutputFormat::table)
    for (const auto& line : limits) fmt::print("site limit: {}\n", line);
  note_undriven(a.db, running);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
