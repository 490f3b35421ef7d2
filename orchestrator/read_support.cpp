#include "orchestrator/read_support.hpp"

#include <fmt/format.h>

namespace dlsweep::orch {

Result<Opened> open_for_reading(const std::string& db, const std::string& format) {
  auto f = parse_output_format(format);
  if (!f) return std::unexpected(f.error());
  auto s = db::Storage::open_readonly(db);
  if (!s) return std::unexpected(s.error());
  return Opened{std::move(*s), *f};
}

Result<db::StudyRow> find_study(const db::Storage& storage, const std::string& name) {
  auto s = storage.find_study(name);
  if (!s) return std::unexpected(s.error());
  if (!*s) {
    std::string known;
    if (auto all = storage.list_studies(); all)
      for (const auto& st : *all) known += (known.empty() ? "" : ", ") + st.name;
    return fail("no study named '" + name + "'", "study",
                known.empty() ? "the database holds no study yet: run `dlsweep submit STUDY` first"
                              : "known studies: " + known);
  }
  return **s;
}

Error parquet_unavailable() {
  return Error{"Parquet is not available: Debian 12 packages no C/C++ Parquet library (Apache Arrow is not in "
               "Debian), and dlsweep uses Debian-packaged libraries only",
               "--format parquet",
               "use --format csv: pandas.read_csv or polars.read_csv read it, and df.to_parquet() writes Parquet "
               "from there"};
}

Result<analysis::StudyData> load_study_data(const std::string& db, const std::string& study) {
  auto s = db::Storage::open_readonly(db);
  if (!s) return std::unexpected(s.error());
  return analysis::load_study(**s, study);
}

}  // namespace dlsweep::orch
