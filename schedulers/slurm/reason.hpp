// reason.hpp — what the controller's pending reason means to dlsweep: the words to
// show (what squeue's %r prints), how they read (routine, the study's own throttle, or
// worth telling the user), and whether Slurm holds the job after failing to start it. Pure:
// records in, values out (tested on squeue output captured from a real controller).
//
// Observed on Slurm 22.05 (tests/schedulers/slurm/data/squeue_held_launch_failed.json): a Prolog that
// fails drains the node ("Prolog error") and leaves the job PENDING with reason JobHeldUser,
// description "launch failed requeued held", restart count 1 and priority 0 — it never runs
// again unless someone releases it. A job waiting for a drained node reads reason Resources
// with the description "Nodes required for job are DOWN, DRAINED or reserved for jobs in
// higher priority partitions"; `scontrol hold` as root gives JobHeldAdmin, no description.
#pragma once

#include <string>

#include "schedulers/backend.hpp"
#include "schedulers/slurm/parse.hpp"

namespace dlsweep::sched::slurm {

/// What squeue's %r prints: the description when the controller gave one, else the reason
/// code; "" for no reason ("None" or nothing).
std::string shown_reason(const JobRecord& rec);

/// throttled: JobArrayTaskLimit (the study's own max_concurrent); routine: None, Priority,
/// Resources, BeginTime, Dependency, Prolog — each without a description; notable: every
/// other reason, and any reason that comes with a description (a drained node, a failed
/// launch).
PendingClass classify_reason(const JobRecord& rec);

/// True for a job that is not running and that Slurm holds after it failed to launch it
/// ("launch failed requeued held"): it waits for a `scontrol release` that nobody will give.
bool held_after_failed_launch(const JobRecord& rec);

/// The message of the `lost` event of such a job once dlsweep has cancelled it.
std::string failed_launch_message(const std::string& shown);

}  // namespace dlsweep::sched::slurm
