// study_feed.hpp — the database side of `dlsweep serve`: the JSON documents the endpoints
// answer with, read through a read-only connection and cached.
//
// Invariants:
//  - The connection is db::Storage::open_readonly (SQLITE_OPEN_READONLY + query_only): no
//    endpoint can write. On a local disk (WAL mode) readers never block the writer; on a
//    shared filesystem the connection reads the published snapshot (db/snapshot.hpp) and
//    follows each new one. Each document is built from short autocommit reads, so no read
//    transaction is held between requests.
//  - A document is rebuilt only when the database changed (PRAGMA data_version on this
//    connection moved) and no more often than once per max(`min_rebuild_s`, kBuildShare x
//    the time its last build took) per document, so any number of pollers costs the
//    database at most one build per document per period, and a study whose document takes
//    long to build (hundreds of thousands of records) takes at most 1/(kBuildShare + 1) of
//    a core, not the CPU the sweep it watches runs on (measured: a 0.5 s period on a study
//    of 480k records slowed a 2-core sweep by 12%).
//  - Not thread-safe: one thread (the server's database thread) calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "db/storage.hpp"

namespace dlsweep::serve {

using Document = std::shared_ptr<const std::string>;

/// What the server asks the database side for. StudyFeed is the real one; tests use fakes.
class FeedSource {
 public:
  virtual ~FeedSource() = default;
  /// JSON array: one object per study in the database.
  virtual Result<Document> studies() = 0;
  /// One study's report data as JSON; nullopt when there is no study of that name.
  virtual Result<std::optional<Document>> study(const std::string& name) = 0;
};

/// Builds one study's document (the report's data model) from a read-only Storage.
using DocBuilder = std::function<Result<nlohmann::json>(const db::Storage&, const db::StudyRow&)>;

/// The report's model of the study (report/report_model.hpp): what render.js draws.
Result<nlohmann::json> report_document(const db::Storage& storage, const db::StudyRow& study);

class StudyFeed final : public FeedSource {
 public:
  using Clock = std::function<double()>;  ///< seconds, monotonic

  /// `builder` empty: report_document.
  StudyFeed(std::unique_ptr<db::Storage> storage, DocBuilder builder = {}, double min_rebuild_s = 0.5,
            Clock clock = {});

  Result<Document> studies() override;
  Result<std::optional<Document>> study(const std::string& name) override;

  /// How many documents were built (cache misses), for tests and the load bench.
  std::uint64_t builds() const { return builds_; }

 private:
  /// A document is not rebuilt within kBuildShare times its build time.
  static constexpr double kBuildShare = 20;

  struct Entry {
    Document doc;
    std::int64_t version = -1;
    double built_at = 0;  ///< when its build ended
    double cost_s = 0;    ///< how long its build took
  };
  Result<std::int64_t> data_version() const;
  /// True if `e` may be answered as is.
  bool fresh(const Entry& e, std::int64_t version) const;

  std::unique_ptr<db::Storage> storage_;
  DocBuilder builder_;
  double min_rebuild_s_;
  Clock clock_;
  Entry studies_;
  std::map<std::string, Entry> per_study_;
  std::uint64_t builds_ = 0;
};

}  // namespace dlsweep::serve
