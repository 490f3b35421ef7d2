// cmd_export.cpp — `dlsweep export STUDY [--curves] [--format csv] [--output FILE]`: a
// study as files for pandas/polars. Without --curves, one row per trial (the columns of
// `results --format csv`: params_<name>, start/end/duration, user_attrs_<key>); with --curves, the long-form
// curves, one row per (trial, attempt, seq, metric). Read-only, like `results`.
//
// Parquet is refused with the reason: Debian 12 packages no C/C++ Parquet library (Apache
// Arrow is not in Debian), and dlsweep uses Debian-packaged libraries only.
// --output writes a temp file beside FILE, fsyncs it and renames it (common/atomic_file): a
// reader never sees half a file, and a failed or crashed export leaves no partial FILE.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include <filesystem>

#include <fmt/format.h>

#include "common/atomic_file.hpp"
#include "db/storage.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "orchestrator/results_frame.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

namespace {

/// stdout, or `path` written through common/atomic_file (AtomicFileWriter: a temp file
/// beside it, fsynced and renamed over it by commit()).
class Sink {
 public:
  static Result<Sink> open(const std::string& path) {
    Sink s;
    if (path.empty() || path == "-") return s;
    auto file = AtomicFileWriter::open(path);
    if (!file) return std::unexpected(file.error());
    s.file_.emplace(std::move(*file));
    return s;
  }
  Status write(const std::string& text) {
    if (file_) return file_->write(text);
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
      return fail(fmt::format("write failed: {}", std::strerror(errno)), "stdout", "check free disk space");
    return {};
  }
  Status commit() {
    if (file_) return file_->commit();
    if (std::fflush(stdout) != 0) return fail(fmt::format("write failed: {}", std::strerror(errno)), "stdout", "check free disk space");
    return {};
  }

 private:
  std::optional<AtomicFileWriter> file_;  ///< nullopt: stdout
};

}  // namespace

int cmd_export(const ExportArgs& a) {
  if (a.format == "parquet") return print_error(parquet_unavailable(), exit_code::usage);
  if (a.format != "csv")
    return print_error(Error{"unknown format '" + a.format + "'", "--format", "use csv"}, exit_code::usage);
  if (std::error_code ec; !a.output.empty() && a.output != "-" && std::filesystem::is_directory(a.output, ec))
    return print_error(Error{"'" + a.output + "' is a directory, not a file", "-o",
                        "name a file in it, e.g. `-o " +
                            (std::filesystem::path(a.output) / (a.study + (a.curves ? "-curves.csv" : ".csv"))).string() +
                            "`"},
                  exit_code::usage);
  auto storage = db::Storage::open_readonly(a.db);
  if (!storage) return print_error(storage.error(), exit_code::usage);
  auto study = (*storage)->find_study(a.study);
  if (!study) return print_error(study.error(), exit_code::runtime);
  if (!*study)
    return print_error(Error{"no study named '" + a.study + "'", "study", "`dlsweep status` lists the studies"},
                  exit_code::usage);
  const std::int64_t sid = (*study)->id;

  auto sink = Sink::open(a.output);
  if (!sink) return print_error(sink.error(), exit_code::runtime);
  if (a.curves) {
    std::vector<nlohmann::json> header;
    for (const auto& c : curve_columns()) header.push_back(c);
    if (auto s = sink->write(csv_row(header)); !s) return print_error(s.error(), exit_code::runtime);
    auto s = (*storage)->for_each_curve_point(sid, [&](const db::CurvePoint& p) { return sink->write(csv_row(curve_cells(p))); });
    if (!s) return print_error(s.error(), exit_code::runtime);
  } else {
    auto trials = (*storage)->summaries(sid);
    if (!trials) return print_error(trials.error(), exit_code::runtime);
    auto times = (*storage)->trial_times(sid);
    if (!times) return print_error(times.error(), exit_code::runtime);
    auto frame = results_frame(*trials, *times, false);
    auto attrs = read_user_attrs(**storage, sid);
    if (!attrs) return print_error(attrs.error(), exit_code::runtime);
    append_user_attr_columns(frame, *attrs, /*before_last=*/false);
    if (auto s = sink->write(render(frame, OutputFormat::csv)); !s)
      return print_error(s.error(), exit_code::runtime);
  }
  if (auto s = sink->commit(); !s) return print_error(s.error(), exit_code::runtime);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
