// engine_pending.cpp — trials whose job waits in the scheduler's queue: the scheduler's
// reason (a `pending` event) is kept in the jobs table for `dlsweep status`, a notable one
// ("launch failed requeued held", a drained node, a QOS limit) is said at once, and a trial
// that has waited backend.pending_warn seconds gets one warning line naming the reason. The
// wording is pending_notice.hpp's.
#include <fmt/format.h>

#include "engine/engine.hpp"
#include "common/site_limit_note.hpp"
#include "engine/pending_notice.hpp"
#include "schedulers/backend_kinds.hpp"

namespace dlsweep::orch {

using sched::PendingClass;

void Engine::note_queued(Live& live, bool queued) {
  live.pending_reason.clear();
  live.pending_class = PendingClass::routine;
  if (!queued) live.pending_since.reset();
  else if (!live.pending_since) live.pending_since = clock_->now();
}

void Engine::on_pending(Live& live, const sched::JobEvent& ev) {
  if (!ev.native_id.empty()) live.native_id = ev.native_id;
  record_job(ev, pending_job_state(ev.message));
  const bool news = ev.message != live.pending_reason || ev.pending_class != live.pending_class;
  live.pending_reason = ev.message;
  live.pending_class = ev.pending_class;
  // Held back by the study's own max_concurrent, it is not waiting on the cluster.
  if (ev.pending_class == PendingClass::throttled) live.pending_since.reset();
  else if (!live.pending_since) live.pending_since = clock_->now();
  if (news && ev.pending_class == PendingClass::notable)
    progress_.event(pending_event_line(live.row.number, std::string(backend_.name()), live.native_id, ev.message),
                    snapshot());
}

void Engine::check_pending() {
  const double warn_s = spec_.backend.pending_warn_s;
  if (warn_s <= 0) return;
  const auto now = clock_->now();
  live_.for_each([&](Live& live) {
    std::optional<double> waited;
    if (live.pending_since) waited = std::chrono::duration<double>(now - *live.pending_since).count();
    if (!pending_warning_due(live.row.state == TrialState::queued, waited, warn_s, live.pending_warned)) return;
    live.pending_warned = true;
    progress_.event(pending_warning_line(live.row.number, *waited, std::string(backend_.name()), live.native_id,
                                         live.pending_reason, warn_s),
                    snapshot());
  });
}

void Engine::check_capacity() {
  const std::string note = backend_.capacity_note();
  if (note.empty() || note == capacity_note_) return;
  capacity_note_ = note;
  db::EventRow e;
  e.study_id = study_id_;
  // The place as prose names it ("Slurm"), recorded with the note: status and serve say it
  // from the event alone, knowing no backend.
  e.who = site_limit_who(sched::backend_display_name(backend_.name()));
  e.kind = kSiteLimitEventKind;
  e.reason = note;
  if (auto st = db().note_event(e); !st) fatal(st.error());
  progress_.event(site_limit_line(note, counts_.queued + counts_.running, counts_.waiting, e.who), snapshot());
}

}  // namespace dlsweep::orch
