// relocation.cpp — the pure parts of following a moved study and refusing a copied one:
// path arithmetic, the stored spec re-rooted, and the decision. See relocation.hpp.
#include "orchestrator/relocation.hpp"

#include <cmath>

#include <fmt/format.h>

#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

// Absolute (against `cwd` when relative), lexically normal, no trailing separator.
fs::path normal(const fs::path& p, const fs::path& cwd = {}) {
  fs::path q = p.is_absolute() || cwd.empty() ? p : cwd / p;
  q = q.lexically_normal();
  if (q.filename().empty() && q.has_parent_path() && q != q.root_path()) q = q.parent_path();
  return q;
}

std::vector<fs::path> parts(const fs::path& p) {
  std::vector<fs::path> out;
  for (const auto& c : p)
    if (!c.empty()) out.push_back(c);
  return out;
}

// A character that cannot continue a path where another word begins or ends.
bool boundary(char c) {
  switch (c) {
    case ' ': case '\t': case '\n': case '=': case ':': case ',': case ';': case '\'': case '"':
    case '(': case ')': case '[': case ']': case '{': case '}':
      return true;
    default:
      return false;
  }
}

// Re-roots every string below `j` (objects and arrays walked).
void reroot_strings(nlohmann::json& j, const Reroot& r, int& changed) {
  if (j.is_string()) {
    std::string s = reroot_text(j.get<std::string>(), r);
    if (s != j.get<std::string>()) {
      j = s;
      ++changed;
    }
  } else if (j.is_object() || j.is_array()) {
    for (auto& v : j) reroot_strings(v, r, changed);
  }
}

std::string quote_arg(const fs::path& p) {
  const std::string s = p.string();
  for (char c : s)
    if (boundary(c) || c == '$' || c == '\\' || c == '`' || c == '*' || c == '?' || c == '&' || c == '|')
      return "'" + s + "'";
  return s;
}

}  // namespace

std::optional<fs::path> reroot_path(const fs::path& p, const Reroot& r) {
  if (!p.is_absolute()) return std::nullopt;
  const auto from = parts(normal(r.from));
  const auto path = parts(normal(p));
  if (path.size() < from.size()) return std::nullopt;
  for (std::size_t i = 0; i < from.size(); ++i)
    if (path[i] != from[i]) return std::nullopt;
  fs::path out = normal(r.to);
  for (std::size_t i = from.size(); i < path.size(); ++i) out /= path[i];
  return out;
}

std::string reroot_text(std::string_view text, const Reroot& r) {
  const std::string from = normal(r.from).string();
  const std::string to = normal(r.to).string();
  if (from.empty() || from == "/" || to.empty()) return std::string(text);
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    auto pos = text.find(from, i);
    if (pos == std::string_view::npos) break;
    const std::size_t end = pos + from.size();
    const bool starts = pos == 0 || boundary(text[pos - 1]);
    const bool ends = end == text.size() || text[end] == '/' || boundary(text[end]);
    out.append(text.substr(i, pos - i));
    if (starts && ends) out += to;
    else out.append(text.substr(pos, from.size()));
    i = end;
  }
  out.append(text.substr(std::min(i, text.size())));
  return out;
}

nlohmann::json reroot_spec(const nlohmann::json& spec, const Reroot& r, int* changed) {
  nlohmann::json out = spec;
  int n = 0;
  if (!out.is_object()) return out;
  if (auto it = out.find("runs_dir"); it != out.end() && it->is_string()) {
    if (auto p = reroot_path(it->get<std::string>(), r)) {
      *it = p->string();
      ++n;
    }
  }
  if (auto t = out.find("trial"); t != out.end() && t->is_object()) {
    if (auto c = t->find("command"); c != t->end()) reroot_strings(*c, r, n);
    if (auto e = t->find("env"); e != t->end()) reroot_strings(*e, r, n);
  }
  if (auto b = out.find("backend"); b != out.end()) reroot_strings(*b, r, n);
  if (auto s = out.find("search"); s != out.end() && s->is_object())
    if (auto w = s->find("warm_start"); w != s->end() && w->is_array())
      for (auto& entry : *w)
        if (entry.is_object())
          if (auto d = entry.find("db"); d != entry.end()) reroot_strings(*d, r, n);
  if (changed) *changed = n;
  return out;
}

fs::path common_root(const std::vector<fs::path>& paths) {
  std::optional<std::vector<fs::path>> common;
  for (const auto& p : paths) {
    if (p.empty() || !p.is_absolute()) continue;
    auto ps = parts(normal(p));
    if (!common) {
      common = ps;
      continue;
    }
    std::size_t k = 0;
    while (k < common->size() && k < ps.size() && (*common)[k] == ps[k]) ++k;
    common->resize(k);
  }
  fs::path out = "/";
  if (common)
    for (const auto& c : *common)
      if (c != "/") out /= c;
  return out;
}

fs::path home_root(const fs::path& db, const fs::path& source_path, const fs::path& root_dir) {
  std::vector<fs::path> dirs;
  if (!db.empty()) dirs.push_back(normal(db).parent_path());
  if (!source_path.empty()) dirs.push_back(normal(source_path).parent_path());
  if (!root_dir.empty()) dirs.push_back(normal(root_dir).parent_path());
  return common_root(dirs);
}

std::optional<Reroot> infer_move(const fs::path& home_db, const fs::path& home_root_dir, const fs::path& db) {
  if (home_db.empty() || home_root_dir.empty() || !home_db.is_absolute() || !db.is_absolute()) return std::nullopt;
  const auto root = parts(normal(home_root_dir));
  const auto old_db = parts(normal(home_db));
  const auto now = parts(normal(db));
  if (old_db.size() <= root.size()) return std::nullopt;
  for (std::size_t i = 0; i < root.size(); ++i)
    if (old_db[i] != root[i]) return std::nullopt;
  const std::size_t below = old_db.size() - root.size();  // the database's path below the root
  if (now.size() < below + 1) return std::nullopt;
  for (std::size_t i = 0; i < below; ++i)
    if (now[now.size() - below + i] != old_db[root.size() + i]) return std::nullopt;
  fs::path to = "/";
  for (std::size_t i = 0; i + below < now.size(); ++i)
    if (now[i] != "/") to /= now[i];
  Reroot r{normal(home_root_dir), normal(to)};
  if (r.from == r.to) return std::nullopt;
  return r;
}

Result<Reroot> parse_relocate(std::string_view arg, const fs::path& cwd) {
  const auto eq = arg.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == arg.size())
    return fail_as(ErrorKind::bad_input, fmt::format("'{}' is not OLD=NEW", arg), "--relocate",
                   "give the directory the project was in and the one it is in now, e.g. "
                   "--relocate /scratch/old/proj=/scratch/new/proj");
  Reroot r{normal(fs::path(std::string(arg.substr(0, eq))), cwd), normal(fs::path(std::string(arg.substr(eq + 1))), cwd)};
  if (r.from == r.to)
    return fail_as(ErrorKind::bad_input, fmt::format("OLD and NEW are the same directory ({})", r.from.string()),
                   "--relocate", "leave --relocate out: nothing moved");
  return r;
}

std::optional<StudyMarker> parse_study_marker(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("study") || !j["study"].is_string() || !j.contains("created_at") ||
      !j["created_at"].is_number())
    return std::nullopt;
  StudyMarker m{j["study"].get<std::string>(), j["created_at"].get<double>(), {}};
  if (j.contains("database") && j["database"].is_string()) m.database = j["database"].get<std::string>();
  return m;
}

bool marker_names(const StudyMarker& m, const std::string& study, double created_at) {
  return m.study == study && std::abs(m.created_at - created_at) < 1e-3;
}

Placement decide_placement(const PlacementFacts& f) {
  const std::string db = quote_arg(f.db);
  const fs::path old_root = !f.home_root.empty() ? f.home_root : home_root({}, f.source_path, f.root_dir);
  auto refuse = [&](std::string what, std::string fix) {
    Placement p;
    p.kind = Placement::refused;
    p.refusal = Error{std::move(what), fmt::format("study '{}' in {}", f.study, f.db.string()), std::move(fix),
                      ErrorKind::bad_input};
    return p;
  };
  auto relocate_fix = [&](const std::optional<Reroot>& r) {
    const std::string from = quote_arg(r ? r->from : old_root);
    const std::string to = r ? quote_arg(r->to) : f.found_new_root ? quote_arg(*f.found_new_root) : "NEW";
    return fmt::format("`dlsweep --db {} resume {} --relocate {}={}`", db, f.study, from, to);
  };
  auto foreign_marker = [&](const fs::path& dir, const StudyMarker& m) {
    return refuse(fmt::format("{} belongs to study '{}' created {} (its {} says so), not to this study created {}",
                              dir.string(), m.study, iso_utc(m.created_at), ".dlsweep-study.json", iso_utc(f.created_at)),
                  "name the directory this study's project is in now with --relocate OLD=NEW");
  };
  auto copy_refusal = [&](const std::optional<Reroot>& r, const std::string& original_db) {
    std::optional<fs::path> copied_file;
    if (r) copied_file = reroot_path(f.source_path, *r);
    return refuse(
        fmt::format("this database is a copy: the study (created {}) still lives in {}, which owns {}; from "
                    "here dlsweep would run and write in the original's files",
                    iso_utc(f.created_at), original_db, f.root_dir.string()),
        fmt::format("{} makes this copy a study of its own, every path re-rooted in the copy; or `dlsweep --db {} "
                    "submit --replace {}` starts the study afresh here",
                    relocate_fix(r), db, copied_file ? quote_arg(*copied_file) : "STUDY_FILE"));
  };
  auto moved_to = [&](Placement::Kind kind, const Reroot& r) {
    Placement p;
    p.kind = kind;
    p.reroot = r;
    p.record_home = true;
    return p;
  };

  // 1. --relocate OLD=NEW: the user says where the study went.
  if (f.explicit_move) {
    const Reroot& r = *f.explicit_move;
    auto to = reroot_path(f.root_dir, r);
    if (!to)
      return refuse(fmt::format("its runs directory {} is not under {}: --relocate would move nothing",
                                f.root_dir.string(), r.from.string()),
                    fmt::format("name as OLD the directory the project was in, e.g. {}", relocate_fix(std::nullopt)));
    if (!f.new_dir.exists)
      return refuse(fmt::format("{} does not exist: --relocate points the study at its files, which must be there",
                                to->string()),
                    fmt::format("move or copy the project to {} first, or correct NEW", r.to.string()));
    if (f.new_dir.marker && !marker_names(*f.new_dir.marker, f.study, f.created_at))
      return foreign_marker(*to, *f.new_dir.marker);
    if (f.home.kind == DbState::holds_study && f.live_batch_trials > 0)
      return refuse(fmt::format("{} trial{} of the original ({}) still run as batch jobs, writing into {}; a copy cannot "
                                "follow them",
                                f.live_batch_trials, f.live_batch_trials == 1 ? "" : "s", f.home_db.string(),
                                f.root_dir.string()),
                    fmt::format("let them finish (`dlsweep --db {} resume {}` follows them), then relocate the copy",
                                quote_arg(f.home_db), f.study));
    return moved_to(Placement::relocated, r);
  }

  // 2. Not the database the study was submitted to: the project moved, or was copied.
  if (!f.home_db.empty() && f.home.kind != DbState::this_db && f.home.kind != DbState::unknown) {
    if (f.home.kind == DbState::holds_study) return copy_refusal(f.inferred, f.home_db.string());
    if (f.inferred) {
      if (f.new_dir.exists) {
        auto to = reroot_path(f.root_dir, *f.inferred);
        if (f.new_dir.marker && !marker_names(*f.new_dir.marker, f.study, f.created_at))
          return foreign_marker(to ? *to : f.root_dir, *f.new_dir.marker);
        return moved_to(Placement::moved, *f.inferred);
      }
    }
    // The database moved on its own: the study's files are where they were.
    if (f.old_dir.exists && (!f.old_dir.marker || marker_names(*f.old_dir.marker, f.study, f.created_at)) &&
        f.old_dir.marker_db.kind != DbState::holds_study) {
      Placement p;
      p.record_home = true;
      p.note = fmt::format("study '{}': its database moved from {} to {}; its files stay in {}", f.study,
                           f.home_db.string(), f.db.string(), f.root_dir.string());
      return p;
    }
    return refuse(fmt::format("its files are not in {}{}: the project moved, and this database cannot tell where",
                              f.root_dir.string(),
                              f.inferred ? fmt::format(" nor in {}", reroot_path(f.root_dir, *f.inferred)
                                                                             .value_or(f.inferred->to)
                                                                             .string())
                                         : std::string()),
                  fmt::format("{} names the directory the project is in now", relocate_fix(std::nullopt)));
  }

  // 3. The study's own database (or a study recorded before its home was).
  Placement p;
  p.record_home = f.home_db.empty() || f.home_root.empty();
  if (f.old_dir.exists) {
    if (f.old_dir.marker && !marker_names(*f.old_dir.marker, f.study, f.created_at))
      return foreign_marker(f.root_dir, *f.old_dir.marker);
    if (f.old_dir.marker && f.old_dir.marker_db.kind == DbState::holds_study)
      return copy_refusal(std::nullopt, f.old_dir.marker->database);
    return p;
  }
  if (!f.old_root_exists)
    return refuse(fmt::format("its files are gone from {} (and {} with them): the project moved", f.root_dir.string(),
                              old_root.string()),
                  fmt::format("{} names the directory the project is in now", relocate_fix(std::nullopt)));
  return p;  // the runs directory alone was removed: the sweep makes it again
}

std::string relocation_line(const Placement& p, const std::string& study, const fs::path& old_db,
                            std::size_t trial_dirs) {
  if (!p.reroot) return p.note;
  const std::string what = fmt::format("its runs directory, {} trial director{} and the study file now point there",
                                       trial_dirs, trial_dirs == 1 ? "y" : "ies");
  if (p.kind == Placement::moved)
    return fmt::format("study '{}' moved: {} -> {} (its database was {}); {}", study, p.reroot->from.string(),
                       p.reroot->to.string(), old_db.string(), what);
  return fmt::format("study '{}' relocated (--relocate): {} -> {}; {}", study, p.reroot->from.string(),
                     p.reroot->to.string(), what);
}

}  // namespace dlsweep::orch
