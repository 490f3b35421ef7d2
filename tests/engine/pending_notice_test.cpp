// What dlsweep says about a trial that waits in the scheduler's queue (pending_notice.hpp)
// and the status line's count of blocked trials (progress.hpp).
#include <catch2/catch.hpp>

#include "engine/pending_notice.hpp"
#include "engine/progress.hpp"

using namespace dlsweep::orch;

TEST_CASE("pending notices: the jobs table's state round-trips the reason", "[pending]") {
  CHECK(pending_job_state("launch failed requeued held") == "PENDING (launch failed requeued held)");
  CHECK(pending_job_state("") == "PENDING");
  CHECK(pending_reason_of("PENDING (launch failed requeued held)") == "launch failed requeued held");
  CHECK(pending_reason_of("PENDING (ReqNodeNotAvail, UnavailableNodes:n[1-2])") ==
        "ReqNodeNotAvail, UnavailableNodes:n[1-2]");
  CHECK(pending_reason_of("PENDING") == "");
  for (const char* other : {"QUEUED", "RUNNING", "REQUEUED", "exited", "lost", "PENDING (", "PENDINGX"})
    CHECK_FALSE(pending_reason_of(other).has_value());
  CHECK(pending_status_message("JobHeldAdmin", "") == "pending: JobHeldAdmin");
  CHECK(pending_status_message("Priority", "retry 1 of 2") == "pending: Priority; retry 1 of 2");
}

TEST_CASE("pending notices: the lines, and when the warning is due", "[pending]") {
  CHECK(pending_event_line(3, "slurm", "12_3", "launch failed requeued held") ==
        "trial 3 pending on slurm (job 12_3): launch failed requeued held");
  CHECK(pending_warning_line(3, 605, "slurm", "12_3", "ReqNodeNotAvail", 600) ==
        "warning: trial 3 has been pending for 10 min 5 s on slurm (job 12_3): ReqNodeNotAvail "
        "(backend.pending_warn: 600 s)");
  CHECK(pending_warning_line(0, 61, "local", "", "", 60) ==
        "warning: trial 0 has been pending for 1 min 1 s on local: the scheduler gives no reason "
        "(backend.pending_warn: 60 s)");
  CHECK(pending_warning_due(true, 600, 600, false));
  CHECK_FALSE(pending_warning_due(true, 599, 600, false));
  CHECK_FALSE(pending_warning_due(true, 900, 600, true));    // once per trial
  CHECK_FALSE(pending_warning_due(false, 900, 600, false));  // running
  CHECK_FALSE(pending_warning_due(true, std::nullopt, 600, false));  // held back by its own throttle
  CHECK_FALSE(pending_warning_due(true, 900, 0, false));     // pending_warn: 0 turns it off
  CHECK(duration_text(45) == "45 s");
  CHECK(duration_text(420) == "7 min");
  CHECK(duration_text(7322) == "2 h 2 min");
  CHECK(duration_text(7200) == "2 h");
}

TEST_CASE("progress: the status line counts queued trials the scheduler blocks", "[pending]") {
  SweepSnapshot s;
  s.total = 4;
  s.queued = 4;
  CHECK_THAT(Progress::status_line(s), Catch::Contains("| 4 queued |"));
  s.blocked = 4;
  CHECK_THAT(Progress::status_line(s), Catch::Contains("| 4 queued (4 blocked) |"));
}
