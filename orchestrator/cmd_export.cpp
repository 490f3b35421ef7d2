// cmd_export.cpp — `dlsweep export STUDY [--curves] [--format csv] [--output FILE]`: a
// study as files for pandas/polars. Without --curves, one row per trial (the columns of
// `results --format csv`: params_<name>, start/end/duration); with --curves, the long-form
// curves, one row per (trial, attempt, seq, metric). Read-only, like `results`.
//
// Parquet is refused with the reason: Debian 12 packages no C/C++ Parquet library (Apache
// Arrow is not in Debian), and dlsweep uses Debian-packaged libraries only.
// --output writes a temp file beside FILE and renames it: a reader never sees half a file,
// and a failed export leaves no partial FILE.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "db/storage.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "orchestrator/results_frame.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

namespace {

namespace fs = std::filesystem;

/// stdout, or a temp file renamed to `path` by commit().
class Sink {
 public:
  static Result<Sink> open(const std::string& path) {
    Sink s;
    if (path.empty() || path == "-") return s;
    s.final_ = path;
    s.temp_ = path + ".tmp-" + std::to_string(::getpid());
    std::FILE* f = std::fopen(s.temp_.c_str(), "wb");
    if (!f)
      return fail(fmt::format("cannot create: {}", std::strerror(errno)), path,
                  "check that the folder exists and is writable");
    s.f_ = f;
    return s;
  }
  Sink() = default;
  Sink(Sink&& o) noexcept : f_(std::exchange(o.f_, stdout)), final_(std::move(o.final_)), temp_(std::move(o.temp_)) {}
  ~Sink() {
    if (f_ && f_ != stdout) {
      std::fclose(f_);
      std::error_code ec;
      fs::remove(temp_, ec);  // not committed: leave nothing half-written behind
    }
  }
  Status write(const std::string& text) {
    if (std::fwrite(text.data(), 1, text.size(), f_) != text.size())
      return fail(fmt::format("write failed: {}", std::strerror(errno)), where(), "check free disk space");
    return {};
  }
  Status commit() {
    if (std::fflush(f_) != 0) return fail(fmt::format("write failed: {}", std::strerror(errno)), where(), "check free disk space");
    if (f_ == stdout) return {};
    if (std::fclose(std::exchange(f_, stdout)) != 0)
      return fail(fmt::format("write failed: {}", std::strerror(errno)), final_, "check free disk space");
    std::error_code ec;
    fs::rename(temp_, final_, ec);
    if (ec) return fail("cannot rename " + temp_ + " into place: " + ec.message(), final_, "check the folder's permissions");
    return {};
  }

 private:
  std::string where() const { return final_.empty() ? "stdout" : final_; }
  std::FILE* f_ = stdout;
  std::string final_, temp_;
};

}  // namespace

int cmd_export(const ExportArgs& a) {
  if (a.format == "parquet")
    return report(Error{"Parquet is not available: Debian 12 packages no C/C++ Parquet library (Apache Arrow is "
                        "not in Debian), and dlsweep uses Debian-packaged libraries only",
                        "--format parquet",
                        "use --format csv: pandas.read_csv or polars.read_csv read it, and df.to_parquet() "
                        "writes Parquet from there"},
                  exit_code::usage);
  if (a.format != "csv")
    return report(Error{"unknown format '" + a.format + "'", "--format", "use csv"}, exit_code::usage);
  auto storage = db::Storage::open_readonly(a.db);
  if (!storage) return report(storage.error(), exit_code::usage);
  auto study = (*storage)->find_study(a.study);
  if (!study) return report(study.error(), exit_code::runtime);
  if (!*study)
    return report(Error{"no study named '" + a.study + "'", "study", "`dlsweep status` lists the studies"},
                  exit_code::usage);
  const std::int64_t sid = (*study)->id;

  auto sink = Sink::open(a.output);
  if (!sink) return report(sink.error(), exit_code::runtime);
  if (a.curves) {
    std::vector<nlohmann::json> header;
    for (const auto& c : curve_columns()) header.push_back(c);
    if (auto s = sink->write(csv_row(header)); !s) return report(s.error(), exit_code::runtime);
    auto s = (*storage)->for_each_curve_point(sid, [&](const db::CurvePoint& p) { return sink->write(csv_row(curve_cells(p))); });
    if (!s) return report(s.error(), exit_code::runtime);
  } else {
    auto trials = (*storage)->summaries(sid);
    if (!trials) return report(trials.error(), exit_code::runtime);
    auto times = (*storage)->trial_times(sid);
    if (!times) return report(times.error(), exit_code::runtime);
    if (auto s = sink->write(render(results_frame(*trials, *times, false), OutputFormat::csv)); !s)
      return report(s.error(), exit_code::runtime);
  }
  if (auto s = sink->commit(); !s) return report(s.error(), exit_code::runtime);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
