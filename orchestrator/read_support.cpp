#include "orchestrator/read_support.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>

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

Result<std::map<std::int64_t, nlohmann::json>> read_user_attrs(const db::Storage& storage, std::int64_t study_id) {
  auto trials = storage.list_trials(study_id);
  if (!trials) return std::unexpected(trials.error());
  std::map<std::int64_t, nlohmann::json> out;
  for (const auto& t : *trials) {
    if (t.trial_dir.empty()) continue;
    const auto file = std::filesystem::path(t.trial_dir) / "user_attrs.json";
    std::ifstream in(file);
    if (!in) continue;
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      fmt::print(stderr, "warning: {}: not a JSON object of attributes; trial {}'s user_attrs left out (fix: "
                         "write it with set_user_attr, or delete the file)\n", file.string(), t.number);
      continue;
    }
    if (!j.empty()) out[t.number] = std::move(j);
  }
  return out;
}

}  // namespace dlsweep::orch
