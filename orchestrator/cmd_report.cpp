// cmd_report.cpp — `dlsweep report STUDY [-o FILE]`: the study's report model (report/) as
// one self-contained HTML file. Read-only: the database is opened read-only and may be
// written by a running sweep at the same time.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/atomic_file.hpp"
#include "db/storage.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/commands.hpp"
#include "engine/progress.hpp"
#include "report/report_model.hpp"
#include "report/report_page.hpp"

namespace dlsweep::orch {

int cmd_report(const ReportArgs& a) {
  if (report::chart_js().empty()) {
    return print_error(Error{"this dlsweep was built without Chart.js, which reports inline; install it "
                             "(Debian: apt-get install libjs-chart.js) and rebuild",
                             "", ""});
  }
  const std::string out = a.output.empty() ? a.study + "-report.html" : a.output;
  if (std::error_code ec; out != "-" && std::filesystem::is_directory(out, ec)) {
    // Checked first: the report was built, then could not be renamed over a folder.
    return print_error(Error{fmt::format("'{}' is a directory, not a file", out), "-o",
                             fmt::format("name a file in it, e.g. `-o {}`",
                                         (std::filesystem::path(out) / (a.study + "-report.html")).string()),
                             ErrorKind::bad_input});
  }
  auto storage = db::Storage::open_readonly(a.db);
  if (!storage) {
    return print_error(storage.error(), exit_code::usage);
  }
  auto model = report::build_report_model(**storage, a.study);
  if (!model) {
    return print_error(model.error());
  }
  const std::string html = report::report_html(*model);
  if (out == "-") {
    std::fwrite(html.data(), 1, html.size(), stdout);
    return std::ferror(stdout) ? exit_code::runtime : exit_code::ok;
  }
  // Written beside the target and renamed over it, so a reader never sees half a report.
  if (auto st = write_file_atomic(out, html, Durability::none); !st) {
    return print_error(Error{"cannot write the report: " + st.error().message(), "", ""});
  }
  fmt::print("wrote {} ({}, {:.1f} KiB; open it in a browser, no network needed)\n", out,
             trials_word(static_cast<std::int64_t>((*model)["trials"].size())), static_cast<double>(html.size()) / 1024.0);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
