// Parsers of squeue --json / sacct / scontrol output, on samples captured from a real
// Slurm 22.05 controller (tests/schedulers/slurm/data/).
#include <catch2/catch.hpp>

#include <algorithm>

#include "schedulers/slurm/parse.hpp"
#include "slurm_test_support.hpp"

using namespace dlsweep::sched::slurm;
using slurm_test::sample;

namespace {

const JobRecord* find(const std::vector<JobRecord>& v, std::uint32_t array, std::optional<std::uint32_t> task,
                      std::uint32_t job = 0) {
  for (const auto& r : v) {
    if (array != 0 && r.array_job_id == array && r.array_task_id == task) return &r;
    if (array == 0 && r.array_job_id == 0 && r.job_id == job) return &r;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("squeue --json: timeout, signalled failure, array task and pending meta record", "[slurm][parse]") {
  auto recs = parse_squeue_json(sample("squeue_timeout_failed_array.json"));
  REQUIRE(recs.has_value());
  REQUIRE(recs->size() == 5);

  const JobRecord* timeout = find(*recs, 0, std::nullopt, 1);
  REQUIRE(timeout);
  CHECK(timeout->state == JobState::timeout);
  CHECK(timeout->reason == "TimeLimit");
  CHECK(timeout->native_id() == "1");

  const JobRecord* killed = find(*recs, 0, std::nullopt, 3);
  REQUIRE(killed);
  CHECK(killed->state == JobState::failed);
  CHECK(decode_wait_status(killed->wait_status).signal == 9);
  CHECK(decode_wait_status(killed->wait_status).exit_code == 137);

  const JobRecord* done = find(*recs, 2, 0u);
  REQUIRE(done);
  CHECK(done->job_id == 4);  // an array task's own id differs from the array's
  CHECK(done->state == JobState::completed);
  CHECK(done->native_id() == "2_0");

  const JobRecord* running = find(*recs, 2, 1u);
  REQUIRE(running);
  CHECK(running->state == JobState::running);

  const JobRecord* meta = find(*recs, 2, std::nullopt);
  REQUIRE(meta);
  CHECK(meta->state == JobState::pending);
  CHECK(meta->reason == "JobArrayTaskLimit");
  CHECK(meta->pending_tasks == std::vector<std::uint32_t>{2, 3});
  CHECK(meta->native_id() == "2_[2-3]");
}

TEST_CASE("squeue --json: requeued and cancelled array tasks, names and comments", "[slurm][parse]") {
  auto recs = parse_squeue_json(sample("squeue_requeued_cancelled.json"));
  REQUIRE(recs.has_value());
  const JobRecord* requeued = find(*recs, 7, 1u);
  REQUIRE(requeued);
  CHECK(requeued->state == JobState::pending);
  CHECK(requeued->restart_count == 1);
  CHECK(requeued->reason == "BeginTime");
  CHECK(requeued->name == "dlsweep:capture");
  CHECK(requeued->comment == "dlsweep:batch-1-2-3");
  const JobRecord* cancelled = find(*recs, 7, 2u);
  REQUIRE(cancelled);
  CHECK(cancelled->state == JobState::cancelled);
  CHECK(decode_wait_status(cancelled->wait_status).signal == 15);
  // Task 4 was cancelled while pending: Slurm dropped it (the tracker knows this).
  CHECK(find(*recs, 7, 4u) == nullptr);
  // The meta record became the last task once every task had left it.
  const JobRecord* last = find(*recs, 7, 5u);
  REQUIRE(last);
  CHECK(last->job_id == 7);
}

TEST_CASE("squeue --json from an unreachable controller is an error, not an empty list", "[slurm][parse]") {
  // squeue exits 0 here; only the "errors" entry tells that nothing was read.
  auto recs = parse_squeue_json(sample("squeue_controller_down.json"));
  REQUIRE_FALSE(recs.has_value());
  CHECK_THAT(recs.error().message(), Catch::Contains("Failed while looking for jobs"));
  CHECK_THAT(recs.error().message(), Catch::Contains("slurm_load_jobs"));
}

TEST_CASE("squeue --json: malformed input and later API layouts", "[slurm][parse]") {
  CHECK_FALSE(parse_squeue_json("not json").has_value());
  CHECK_FALSE(parse_squeue_json("[]").has_value());
  CHECK_FALSE(parse_squeue_json(R"({"errors": []})").has_value());
  // v0.0.39+: state as a list of words, numbers wrapped, exit_code as an object.
  auto recs = parse_squeue_json(R"({"errors": [], "jobs": [
      {"job_id": 12, "array_job_id": {"set": true, "number": 10}, "array_task_id": {"set": true, "number": 2},
       "job_state": ["PENDING", "REQUEUED"], "exit_code": {"status": "EXITED", "return_code": {"set": true, "number": 3}},
       "restart_cnt": 2, "name": "dlsweep:x", "comment": "c"},
      {"job_id": 13, "array_job_id": {"set": false, "number": 0}, "array_task_id": {"set": false, "number": 0},
       "job_state": ["FAILED"], "exit_code": {"status": "SIGNALED", "return_code": {"set": true, "number": 0},
       "signal": {"signal_id": {"set": true, "number": 9}, "name": "KILL"}}}]})");
  REQUIRE(recs.has_value());
  REQUIRE(recs->size() == 2);
  CHECK((*recs)[0].array_job_id == 10);
  CHECK((*recs)[0].array_task_id == 2u);
  CHECK((*recs)[0].state == JobState::requeued);
  CHECK(decode_wait_status((*recs)[0].wait_status).exit_code == 3);
  CHECK((*recs)[0].restart_count == 2);
  CHECK((*recs)[1].array_job_id == 0);
  CHECK((*recs)[1].state == JobState::failed);
  CHECK(decode_wait_status((*recs)[1].wait_status).signal == 9);
}

// Found by fuzz/slurm_parse_fuzz.cpp review: a "set" that is not a boolean threw
// json::type_error out of parse_squeue_json, and a float "number" (1e300) was converted to
// int64 (undefined behaviour). Both now read as "not set".
TEST_CASE("squeue --json: odd wrapped numbers are 'not set', never an exception", "[slurm][parse]") {
  auto recs = parse_squeue_json(R"({"errors": [], "jobs": [
      {"job_id": 12, "array_job_id": {"set": "yes", "number": 10}, "array_task_id": {"number": 1e300},
       "exit_code": {"return_code": {"set": 1, "number": 3}, "signal": {"signal_id": 1e300}},
       "restart_cnt": -1e300},
      {"job_id": 1e300, "exit_code": 2.5}]})");
  REQUIRE(recs.has_value());
  REQUIRE(recs->size() == 2);
  CHECK((*recs)[0].job_id == 12);
  CHECK((*recs)[0].array_job_id == 0);
  CHECK_FALSE((*recs)[0].array_task_id.has_value());
  CHECK((*recs)[0].wait_status == 0);
  CHECK((*recs)[0].restart_count == 0);
  CHECK((*recs)[1].job_id == 0);
  CHECK((*recs)[1].wait_status == 0);
}

TEST_CASE("sacct -c output (jobcomp, no slurmdbd) and sacct with array ids", "[slurm][parse]") {
  auto recs = parse_sacct(sample("sacct_jobcomp.txt"));
  REQUIRE(recs.has_value());
  REQUIRE(recs->size() == 3);
  CHECK((*recs)[0].job_id == 3);
  CHECK((*recs)[0].state == JobState::failed);
  CHECK(decode_wait_status((*recs)[0].wait_status).signal == 9);
  CHECK((*recs)[1].state == JobState::timeout);
  CHECK((*recs)[2].state == JobState::completed);

  auto dbd = parse_sacct("12_3|FAILED|3:0\n12_3.batch|FAILED|3:0\n12_[4-9]|PENDING|0:0\n15|CANCELLED by 0|0:15\n\n");
  REQUIRE(dbd.has_value());
  REQUIRE(dbd->size() == 2);
  CHECK((*dbd)[0].array_job_id == 12);
  CHECK((*dbd)[0].array_task_id == 3u);
  CHECK(decode_wait_status((*dbd)[0].wait_status).exit_code == 3);
  CHECK((*dbd)[1].job_id == 15);
  CHECK((*dbd)[1].state == JobState::cancelled);
  CHECK(decode_wait_status((*dbd)[1].wait_status).signal == 15);

  CHECK_FALSE(parse_sacct("12|COMPLETED\n").has_value());
  CHECK_FALSE(parse_sacct("12|COMPLETED|x:y\n").has_value());
}

TEST_CASE("MaxArraySize from scontrol show config", "[slurm][parse]") {
  auto v = parse_max_array_size(sample("scontrol_show_config.txt"));
  REQUIRE(v.has_value());
  CHECK(*v == 1001);
  CHECK(parse_max_array_size("Foo = 1\nMaxArraySize            = 4\n").value() == 4);
  CHECK_FALSE(parse_max_array_size("MaxJobCount = 10000\n").has_value());
  CHECK_FALSE(parse_max_array_size("MaxArraySize = lots\n").has_value());
}

TEST_CASE("array task expressions", "[slurm][parse]") {
  CHECK(parse_array_tasks("0-5%2").value() == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5});
  CHECK(parse_array_tasks("[1,3,5-7]").value() == std::vector<std::uint32_t>{1, 3, 5, 6, 7});
  CHECK(parse_array_tasks("0-15:5").value() == std::vector<std::uint32_t>{0, 5, 10, 15});
  CHECK(parse_array_tasks("").value().empty());
  CHECK_FALSE(parse_array_tasks("5-3").has_value());
  CHECK_FALSE(parse_array_tasks("a-b").has_value());
  CHECK_FALSE(parse_array_tasks("0-100", 10).has_value());
  CHECK(format_array_tasks({7, 1, 2, 3, 9, 10}) == "1-3,7,9-10");
  CHECK(format_array_tasks({4}) == "4");
}

TEST_CASE("job state names", "[slurm][parse]") {
  CHECK(parse_job_state("CANCELLED by 0") == JobState::cancelled);
  CHECK(parse_job_state("COMPLETING") == JobState::completing);
  CHECK(parse_job_state("REQUEUE_HOLD") == JobState::held);
  CHECK(parse_job_state("OUT_OF_MEMORY") == JobState::out_of_memory);
  CHECK(parse_job_state("SOMETHING_NEW") == JobState::unknown);
  CHECK(is_final(JobState::timeout));
  CHECK_FALSE(is_final(JobState::completing));
  CHECK_FALSE(is_final(JobState::unknown));
  for (auto s : {JobState::pending, JobState::running, JobState::completed, JobState::failed, JobState::cancelled,
                 JobState::timeout, JobState::node_fail, JobState::preempted, JobState::out_of_memory})
    CHECK(parse_job_state(to_string(s)) == s);
}
