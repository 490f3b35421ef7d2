// perf_test.cpp — a hidden benchmark-style test (run with `test_db "[perf]"`): ingests a
// realistic study (100 trials x 500 eval records x 10 metrics = 500k metric rows) and
// times ingestion and Storage::summaries(), which `dlsweep status` calls on every refresh.
// The bounds are generous; the printed figures are what to compare.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "db_test_support.hpp"

using namespace dlsweep;
using namespace dlsweep::db;
using namespace dlsweep::db::testing;

static std::string fmt_metric(int k) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "m%d", k);
  return buf;
}

TEST_CASE("ingest and summaries at study scale", "[.][perf]") {
  constexpr int kTrials = 100, kRecords = 500, kMetrics = 10, kBatch = 50;
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = must(s->create_study(study_named("perf", "max", 0.9)));
  std::vector<std::string> names;  // built once: the names repeat in every record
  for (int k = 2; k < kMetrics; ++k) names.push_back(fmt_metric(k));
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  for (int t = 0; t < kTrials; ++t) {
    auto id = must(s->create_trial(study, t, {{"lr", 0.1 * t}}, "d"));
    // Batches of kBatch records, as the orchestrator ingests them from a growing file.
    for (int b = 0; b < kRecords; b += kBatch) {
      std::vector<protocol::Record> batch;
      for (int i = b; i < b + kBatch; ++i) {
        std::map<std::string, double> m;
        m["val_acc"] = 0.5 + 0.5 * i / kRecords * (0.8 + 0.4 * t / kTrials);
        m["samples_per_s"] = 1000.0 + t;
        for (int k = 2; k < kMetrics; ++k) m[names[k - 2]] = i * k;
        batch.push_back(eval_record(i, 10 * (i + 1), 0.5 * (i + 1), std::move(m)));
      }
      REQUIRE(must(s->ingest(id, 0, batch)) == static_cast<std::size_t>(kBatch));
    }
  }
  auto t1 = clock::now();
  auto sums = must(s->summaries(study));
  auto t2 = clock::now();
  auto ro = must(Storage::open_readonly(dir / "sweep.db"));
  auto t3 = clock::now();
  auto again = must(ro->summaries(study));
  auto t4 = clock::now();
  must(ro->summaries(study));
  auto t5 = clock::now();
  REQUIRE(sums.size() == static_cast<std::size_t>(kTrials));
  REQUIRE(again.size() == sums.size());
  const double ingest_s = std::chrono::duration<double>(t1 - t0).count();
  const double sum_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  const double ro_ms = std::chrono::duration<double, std::milli>(t4 - t3).count();
  const double warm_ms = std::chrono::duration<double, std::milli>(t5 - t4).count();
  const double rows = double(kTrials) * kRecords * kMetrics;
  std::printf("ingest: %.0f metric rows in %.2f s (%.0f rows/s, batches of %d records)\n", rows, ingest_s,
              rows / ingest_s, kBatch);
  std::printf("summaries(%d trials): %.1f ms read-write handle, %.1f ms fresh read-only handle, %.1f ms again\n",
              kTrials, sum_ms, ro_ms, warm_ms);
  CHECK(sum_ms < 2000);
  CHECK(ingest_s < 120);
}
