// backend.cpp — preflight, batching and submission of Slurm jobs (polling, cancelling and
// finding jobs: backend_tracking.cpp); see the header for the contract. Invariants kept here:
//  - A job is in exactly one place: waiting_ (not in a batch), a Batch in batches_ (being
//    submitted), or the tracker (accepted by the controller). jobs_ holds every job not yet
//    terminal; it leaves jobs_ exactly when its terminal event is emitted.
//  - Only the worker thread calls the driver; only the io thread touches the members.
//  - At most one submission, one poll and one cancel call are in flight at a time.
//  - events are posted, never called inline, so a handler may call back into the backend.
#include "schedulers/slurm/backend.hpp"
#include "schedulers/slurm/backend_internal.hpp"

#include "common/atomic_file.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <future>
#include <set>

#include <fmt/format.h>

#include "schedulers/slurm/shared_runs_dir.hpp"
#include "schedulers/slurm/refusal.hpp"

#include "schedulers/slurm/quote.hpp"

namespace dlsweep::sched {

namespace fs = std::filesystem;
using namespace slurm;

// Job, Batch and seconds() are in backend_internal.hpp, shared with backend_tracking.cpp.

// ---------------------------------------------------------------- preflight

Status SlurmBackend::preflight(const JobSpec& sample) {
  // sbatch retries a missing SLURM_CONF file for a minute before it says so.
  std::error_code ec;
  if (!options_.slurm_conf.empty() && !fs::is_regular_file(options_.slurm_conf, ec))
    return fail(fmt::format("no Slurm configuration file at {}", options_.slurm_conf), "backend.slurm_conf",
                "give the path of the cluster's slurm.conf (`scontrol show config | grep SLURM_CONF` on a node "
                "where Slurm works), or remove the key to use $SLURM_CONF");
  BatchRequest req = single_job_request(sample, "preflight", options_.script_dir, time_limit_minutes(sample.timeout_s));
  req.throttle = options_.max_concurrent;
  auto prepared = prepare_batch(template_text_, options_, req);
  if (!prepared) return std::unexpected(prepared.error());
  if (auto st = write_file_atomic(req.index_path(), prepared->index_text); !st) return st;
  if (auto st = write_file_atomic(req.script_path(), prepared->request.script); !st) return st;
  auto r = driver_->test_only(prepared->request);
  if (!r && r.error().transient)
    return fail("the Slurm controller did not answer `sbatch --test-only`: " + r.error().error.message(), "backend",
                "check that slurmctld is up (`scontrol ping`), then submit again");
  if (!r) return std::unexpected(explain_refusal(r.error().error.what, options_));
  // The site's submit limit, where its accounting says it: exact from the first array.
  if (auto known = driver_->submit_limit(options_.qos)) capacity_.known(known->limit, known->jobs);
  // Then (the cluster's own refusals, e.g. an unknown partition, come first): can the
  // nodes see the trial directories?
  std::map<std::string, std::string> slurm_env;
  if (!options_.slurm_conf.empty()) slurm_env["SLURM_CONF"] = options_.slurm_conf;
  return slurm::check_runs_dir(sample.workdir.parent_path(), options_.partition, slurm_env);
}

// ---------------------------------------------------------------- construction

Result<std::unique_ptr<SlurmBackend>> SlurmBackend::create(boost::asio::io_context& io, SlurmOptions options) {
  if (auto st = validate_options(options); !st) return std::unexpected(st.error());
  auto driver = make_driver(options);
  if (!driver) return std::unexpected(driver.error());
  auto backend = create(io, std::move(options), std::move(*driver));
  if (backend) (*backend)->last_cancels_ = true;
  return backend;
}

Result<std::unique_ptr<SlurmBackend>> SlurmBackend::create(boost::asio::io_context& io, SlurmOptions options,
                                                           std::unique_ptr<Driver> driver) {
  if (auto st = validate_options(options); !st) return std::unexpected(st.error());
  std::error_code ec;
  options.script_dir = fs::absolute(options.script_dir, ec);
  if (options.create_script_dir) fs::create_directories(options.script_dir, ec);
  if (ec) {
    return fail(fmt::format("cannot create '{}': {}", options.script_dir.string(), ec.message()), "slurm.script_dir",
                "choose a writable directory on a filesystem the compute nodes see");
  }
  if (options.max_concurrent == 0) options.max_concurrent = 1;
  if (options.submit_window < options.max_concurrent) options.submit_window = options.max_concurrent;
  auto tmpl = load_template(options);
  if (!tmpl) return std::unexpected(tmpl.error());
  return std::unique_ptr<SlurmBackend>(new SlurmBackend(io, std::move(options), std::move(*tmpl), std::move(driver)));
}

SlurmBackend::SlurmBackend(boost::asio::io_context& io, SlurmOptions options, std::string template_text,
                           std::unique_ptr<Driver> driver)
    : io_(io),
      options_(std::move(options)),
      template_text_(std::move(template_text)),
      driver_(std::move(driver)),
      tracker_(options_.vanish_polls),
      poll_interval_s_(options_.poll_min_s),
      poll_timer_(io) {}

SlurmBackend::~SlurmBackend() {
  alive_.reset();  // completions and timers already queued become no-ops
  driver_->interrupt();
  worker_.stop();
  worker_.join();
  poll_timer_.cancel();
  if (capacity_timer_) capacity_timer_->cancel();
  for (auto& w : retry_timers_)
    if (auto t = w.lock()) t->cancel();
  send_last_cancels();
}


// ---------------------------------------------------------------- plumbing

// run_on_worker (a template both files use) is in backend_internal.hpp.

void SlurmBackend::emit(const Job& job, JobEventKind kind, std::string message, std::string native_id, int exit_code,
                        int signal, bool cannot_start, PendingClass pending_class, bool launch_failed) {
  JobEvent ev = job_event(job.id, job.spec.trial_id, job.spec.attempt, kind, std::move(message), std::move(native_id),
                          exit_code, signal);
  ev.cannot_start = cannot_start;
  ev.pending_class = pending_class;
  ev.launch_failed = launch_failed;
  boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_), ev = std::move(ev)] {
    if (alive.expired()) return;
    if (handler_) handler_(ev);
  });
}

void SlurmBackend::log(const std::string& msg) {
  if (log_) log_(msg);
  else std::fprintf(stderr, "dlsweep slurm: %s\n", msg.c_str());
}

void SlurmBackend::retry_later(double delay_s, std::function<void()> what) {
  auto timer = std::make_shared<boost::asio::steady_timer>(io_);
  std::erase_if(retry_timers_, [](const auto& w) { return w.expired(); });
  retry_timers_.push_back(timer);
  timer->expires_after(seconds(delay_s));
  timer->async_wait([timer, what = std::move(what), alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    what();
  });
}

std::string SlurmBackend::native_id(const std::string& job_id) const { return tracker_.native_id(job_id); }

// ---------------------------------------------------------------- submit

Status SlurmBackend::check_job(const JobSpec& spec) {
  const std::string where = "slurm job " + spec.token();
  if (spec.argv.empty() || spec.argv[0].empty()) return fail("empty command line", where, "give the job a program to run");
  if (spec.workdir.empty())
    return fail("no working directory", where, "set the job's workdir (the trial directory)");
  if (spec.ranks < 1) return fail(fmt::format("ranks = {}", spec.ranks), where, "use 1 or more ranks");
  if (spec.timeout_s < 0) return fail("negative timeout", where, "use 0 (none) or a positive number of seconds");
  // Refuse what cannot be written safely now, not when the batch goes out.
  BatchRequest probe;
  probe.tag = "probe";
  probe.tasks.push_back(BatchTask{spec.token(), spec.workdir, spec.argv, spec.env});
  if (auto idx = render_index(probe); !idx) return std::unexpected(idx.error());
  return {};
}

Shape SlurmBackend::shape_of(const JobSpec& spec) {
  return Shape{spec.study, spec.ranks, time_limit_minutes(spec.timeout_s), spec.launcher, spec.warn_always};
}

BatchRequest SlurmBackend::request_for(const PlannedArray& a, std::string tag, const fs::path& script_dir) {
  BatchRequest r;
  r.study = a.shape.study;
  r.tag = std::move(tag);
  r.script_dir = script_dir;
  r.ranks = a.shape.ranks;
  r.launcher = a.shape.launcher;
  r.warn_always = a.shape.warn_always;
  r.time_limit_min = a.shape.time_limit_min;
  r.throttle = a.throttle;
  return r;
}

Result<std::string> SlurmBackend::submit(const JobSpec& spec) {
  if (auto st = check_job(spec); !st) return std::unexpected(st.error());
  std::error_code ec;
  fs::path dir = fs::absolute(spec.workdir, ec);
  fs::create_directories(dir, ec);
  if (ec) {
    return fail(fmt::format("cannot create working directory '{}': {}", dir.string(), ec.message()),
                "slurm job " + spec.token(), "check the permissions of the study directory");
  }
  auto job = std::make_unique<Job>();
  job->id = fmt::format("slurm-{}.{}", getpid(), ++seq_);
  job->spec = spec;
  job->spec.workdir = dir;
  job->shape = shape_of(spec);
  std::string id = job->id;
  jobs_.emplace(id, std::move(job));
  waiting_.push_back(id);
  schedule_flush();
  return id;
}

Result<std::string> SlurmBackend::adopt(const JobSpec& spec, const std::string& native_id) {
  const std::string where = fmt::format("adopting Slurm job '{}' for {}", native_id, spec.token());
  auto number = [](std::string_view s) -> std::optional<std::uint32_t> {
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
  };
  auto us = native_id.find('_');
  auto job_id = number(std::string_view(native_id).substr(0, us));
  std::optional<std::uint32_t> task;
  if (us != std::string::npos) {
    task = number(std::string_view(native_id).substr(us + 1));
    if (!task) job_id.reset();
  }
  if (!job_id || *job_id == 0) return fail("not a Slurm job id", where, "use the form 1234 or 1234_5");
  auto job = std::make_unique<Job>();
  job->id = fmt::format("slurm-{}.{}", getpid(), ++seq_);
  job->spec = spec;
  job->shape = Shape{spec.study, spec.ranks, time_limit_minutes(spec.timeout_s), spec.launcher, spec.warn_always};
  const std::string id = job->id;
  tracker_.add(id, *job_id, task);
  emit(*job, JobEventKind::queued, "adopted Slurm job " + native_id, tracker_.native_id(id));
  jobs_.emplace(id, std::move(job));
  poll_interval_s_ = options_.poll_min_s;
  schedule_poll(options_.poll_min_s);
  return id;
}

void SlurmBackend::schedule_flush() {
  if (flush_posted_) return;
  flush_posted_ = true;
  boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_)] {
    if (alive.expired()) return;
    flush_posted_ = false;
    flush();
  });
}

void SlurmBackend::fetch_max_array_size() {
  if (fetching_max_array_) return;
  fetching_max_array_ = true;
  run_on_worker([](Driver& d) { return d.max_array_size(); }, [this](DriverResult<int> r) {
    fetching_max_array_ = false;
    if (r) {
      // MaxArraySize N allows indexes 0..N-1, i.e. N tasks per array.
      max_array_ = static_cast<std::size_t>(std::max(*r, 1));
      stats_.max_array_size = *max_array_;
      flush();
    } else if (r.error().transient) {
      log("cannot read MaxArraySize yet: " + r.error().error.message());
      retry_later(poll_interval_s_, [this] { fetch_max_array_size(); });
    } else {
      log("cannot read MaxArraySize (" + r.error().error.message() + "); assuming Slurm's default 1001");
      max_array_ = 1001;
      flush();
    }
  });
}

void SlurmBackend::flush() {
  if (waiting_.empty()) {
    cancel_capacity_retry();  // nothing waits for room
    return;
  }
  if (!max_array_) {
    fetch_max_array_size();
    return;
  }
  std::vector<WaitingJob> waiting;
  waiting.reserve(waiting_.size());
  for (const auto& id : waiting_) waiting.push_back({id, jobs_.at(id)->shape});
  const std::size_t live = in_slurm();
  const std::size_t room = capacity_.room(live, now_s());
  auto plan = plan_arrays(waiting, options_.max_concurrent, live, *max_array_, room);
  if (plan.empty() && room == 0) arm_capacity_retry();
  std::set<std::string> planned;
  for (auto& a : plan) {
    auto batch = std::make_unique<Batch>();
    batch->request =
        request_for(a, fmt::format("batch-{}-{}-{}", std::time(nullptr), getpid(), ++batch_seq_), options_.script_dir);
    for (const auto& id : a.ids) {
      const Job& j = *jobs_.at(id);
      batch->request.tasks.push_back(BatchTask{j.spec.token(), j.spec.workdir, j.spec.argv, j.spec.env});
      planned.insert(id);
    }
    batch->ids = a.ids;
    if (auto st = prepare(*batch); !st) {
      // Not retryable (bad template, disk full): these jobs cannot run.
      for (const auto& id : a.ids) {
        emit(*jobs_.at(id), JobEventKind::lost, st.error().message());
        jobs_.erase(id);
      }
      continue;
    }
    for (const auto& id : a.ids) jobs_.at(id)->in_batch = true;
    batch->first_try = std::chrono::steady_clock::now();
    batches_.push_back(std::move(batch));
  }
  std::erase_if(waiting_, [&](const std::string& id) { return planned.count(id) != 0; });
  start_next_submission();
}

Status SlurmBackend::prepare(Batch& batch) {
  auto prepared = prepare_batch(template_text_, options_, batch.request);
  if (!prepared) return std::unexpected(prepared.error());
  batch.prepared = std::move(*prepared);
  // The index first: a script must never exist without the index it reads.
  if (auto st = write_file_atomic(batch.request.index_path(), batch.prepared.index_text); !st) return st;
  return write_file_atomic(batch.request.script_path(), batch.prepared.request.script);
}

void SlurmBackend::start_next_submission() {
  if (submit_in_flight_ || batches_.empty()) return;
  submit_in_flight_ = true;
  Batch* batch = batches_.front().get();
  batch->attempts++;
  batch->sending = true;
  SubmitRequest req = batch->prepared.request;
  const bool ambiguous = batch->ambiguous;
  const std::string comment = req.comment;
  run_on_worker(
      [req = std::move(req), ambiguous, comment](Driver& d) -> DriverResult<std::uint32_t> {
        if (ambiguous) {
          // A previous sbatch timed out: it may have been accepted. Adopt it if so.
          auto jobs = d.list_jobs();
          if (!jobs) return std::unexpected(jobs.error());
          for (const auto& r : *jobs)
            if (r.comment == comment) return r.array_job_id != 0 ? r.array_job_id : r.job_id;
        }
        return d.submit(req);
      },
      [this, batch](DriverResult<std::uint32_t> r) {
        submit_in_flight_ = false;
        batch->sending = false;
        on_submitted(*batch, std::move(r));
        start_next_submission();
      });
}

void SlurmBackend::on_submitted(Batch& batch, DriverResult<std::uint32_t> r) {
  auto drop_front = [this] { batches_.pop_front(); };
  if (!r) {
    stats_.submit_failures++;
    const Error& e = r.error().error;
    // "Not now" (a submit limit, an array too large, the controller full): the jobs wait for
    // room; never a failure, never the controller-is-down fix.
    if (auto limit = capacity_refusal(e.what); limit && !e.is(ErrorKind::timeout)) {
      on_capacity_refusal(batch, *limit);
      return;
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - batch.first_try).count();
    if (r.error().transient && waited < options_.submit_give_up_s) {
      batch.ambiguous = batch.ambiguous || e.is(ErrorKind::timeout);  // it may have been queued
      const double delay = std::min(options_.poll_max_s, options_.poll_min_s * (1 << std::min(batch.attempts, 10)));
      log(fmt::format("submitting {} ({} job(s)) failed, retrying in {:g} s: {}", batch.request.tag, batch.ids.size(),
                      delay, e.message()));
      // The batch stays at the front: it goes out before anything submitted later.
      submit_in_flight_ = true;  // hold the queue until the retry
      retry_later(delay, [this] {
        submit_in_flight_ = false;
        start_next_submission();
      });
      return;
    }
    // A refusal is the same for every retry: it fails the trials without using their retries.
    std::string why = r.error().transient
                          ? fmt::format("could not be submitted for {:.0f} s: {}", waited, e.message())
                          : "Slurm refused the job: " + explain_refusal(e.what, options_).message();
    for (const auto& id : batch.ids) {
      auto it = jobs_.find(id);
      if (it == jobs_.end()) continue;
      emit(*it->second, it->second->cancel_requested ? JobEventKind::cancelled : JobEventKind::lost,
           it->second->cancel_requested ? "cancelled before it was submitted" : why, {}, 0, 0,
           /*cannot_start=*/!r.error().transient);
      jobs_.erase(it);
    }
    drop_front();
    schedule_flush();
    return;
  }
  stats_.submissions++;
  capacity_.accepted(in_slurm());  // the batch still counts: it is accepted now
  const std::uint32_t job_id = *r;
  const bool array = batch.ids.size() > 1;
  bool cancels = false;
  for (std::size_t i = 0; i < batch.ids.size(); ++i) {
    const std::string& id = batch.ids[i];
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    Job& job = *it->second;
    job.in_batch = false;
    tracker_.add(id, job_id, array ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(i)) : std::nullopt);
    emit(job, JobEventKind::queued, fmt::format("submitted to Slurm as {}", tracker_.native_id(id)),
         tracker_.native_id(id));
    if (job.cancel_requested) {
      tracker_.cancel_requested(id);
      to_cancel_.push_back(id);
      cancels = true;
    }
  }
  drop_front();
  if (waiting_.empty()) cancel_capacity_retry();
  if (cancels) schedule_cancel_flush();
  poll_interval_s_ = options_.poll_min_s;
  schedule_poll(options_.poll_min_s);
}

}  // namespace dlsweep::sched
