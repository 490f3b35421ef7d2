// spec.cpp — a study file to a validated StudySpec, and back to normalised JSON.
//
// parse_study reads every section even after errors, so one run shows the user every
// problem. The StudySpec is returned only when there were none. Its way back to JSON,
// to_json(), is in spec_json.cpp.
#include "study/spec.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "study/limits.hpp"
#include "study/objectives.hpp"
#include "study/branch.hpp"
#include "study/pbt.hpp"
#include "study/reader.hpp"
#include "study/section_reader.hpp"
#include "common/train_params.hpp"
#include "study/space.hpp"
#include "study/tree.hpp"
#include "study/warm_start.hpp"
#include "schedulers/launch.hpp"
#include "schedulers/backend_kinds.hpp"
#include "search/conditional.hpp"

namespace dlsweep::orch {

std::string ValidationError::message() const {
  std::string m = file;
  if (line > 0) m += fmt::format(":{}", line);
  m += ": ";
  if (!key_path.empty()) m += key_path + ": ";
  m += what;
  if (!fix.empty()) m += " (fix: " + fix + ")";
  return m;
}

namespace {

constexpr std::string_view kTopKeys[] = {"name",  "description", "backend", "trial",   "objective",
                                         "search", "pruner",     "space",   "fixed",   "runs_dir",
                                         "constraints"};
constexpr std::string_view kPrunerShared[] = {"kind", "by", "group_by", "warmup"};
constexpr std::string_view kPrunerAxes[] = {"epoch", "step", "samples", "wall_s"};
constexpr std::string_view kBackendShared[] = {"kind", "max_concurrent", "pending_warn"};
constexpr std::string_view kTrialKeys[] = {"trainer", "command", "ranks", "launcher", "timeout", "max_retries", "fail_fast", "env",
                                           "unread_params"};
constexpr std::string_view kSearchShared[] = {"algorithm", "trials", "seed", "warm_start"};
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

bool valid_study_name(const std::string& s) {
  if (s.empty() || s.size() > 64 || !std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

bool valid_env_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

// The allowed keys of a section: the shared ones, then those of the algorithm (or of every
// algorithm when it is unknown, so a bad name does not also flag all its options).
template <class KeysOf>
std::vector<std::string_view> section_keys(std::span<const std::string_view> shared, const std::string& name,
                                           const std::vector<std::string_view>& names, KeysOf keys_of) {
  std::vector<std::string_view> keys(shared.begin(), shared.end());
  for (auto n : names) {
    if (!name.empty() && n != name) continue;
    for (auto k : keys_of(std::string(n)))
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  return keys;
}

// A section's keys that belong to another algorithm than `chosen` (`resample_probability`
// under nsga2): said as such — which algorithm takes it — rather than "unknown key", and
// added to `keys` so that the generic check does not say it again.
template <class KeysOf>
std::vector<std::string_view> with_foreign_keys(StudyReader& r, const Field& section, std::vector<std::string_view> keys,
                                                const std::string& chosen, const std::vector<std::string_view>& names,
                                                KeysOf keys_of, std::string_view selector) {
  if (!section || !section->is_object() || chosen.empty()) return keys;
  for (const auto& [key, _] : section->items()) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    std::vector<std::string_view> owners;
    for (auto n : names) {
      const auto ks = keys_of(std::string(n));
      if (std::find(ks.begin(), ks.end(), key) != ks.end()) owners.push_back(n);
    }
    if (owners.empty()) continue;
    std::string list;
    for (std::size_t i = 0; i < owners.size(); ++i)  // "a", "a or b", "a, b or c"
      list += (i == 0 ? "" : i + 1 == owners.size() ? " or " : ", ") + std::string(owners[i]);
    r.error(StudyReader::field(section, key).path, fmt::format("'{}' is an option of {}, not of {}", key, list, chosen),
            fmt::format("remove it, or set {}: {} to use it", selector, owners.front()));
    keys.push_back(key);
  }
  return keys;
}

class StudyParser {
 public:
  StudyParser(StudyReader& r, const Tree& root) : r_(r), root_{&root, ""} {}

  StudySpec parse() {
    r_.map(root_, kTopKeys);
    read_name();
    if (Field d = StudyReader::field(root_, "description"))
      if (auto s = r_.string(d)) spec_.description = *s;
    read_backend();
    read_trial();
    read_objective();
    read_search();
    read_pruner();
    check_pruner_objectives(r_, root_, spec_);
    check_rank_by(r_, root_, spec_);
    auto space = read_space(r_, StudyReader::field(trial_, "trainer"), StudyReader::field(root_, "fixed"),
                            StudyReader::field(root_, "space"), spec_.trial.embedded);
    spec_.space = std::move(space.space);
    check_search_fits_space(space.dim_paths);
    check_gpus_requested();
    check_group_by();
    check_ranks();
    spec_.runs_dir = "dlsweep-runs";
    if (Field d = StudyReader::field(root_, "runs_dir"))
      if (auto s = r_.string(d)) {
        if (s->empty()) r_.error(d.path, "runs_dir is empty", "give a directory, or leave runs_dir out");
        else spec_.runs_dir = *s;
      }
    return std::move(spec_);
  }

 private:
  // device: cuda on Slurm needs GPUs in the job: a study whose every trial trains on a GPU
  // but whose batch script requests none would fail in every task after its queue wait.
  void check_gpus_requested() {
    const sched::BackendKind* kind = sched::find_backend_kind(spec_.backend.kind);
    if (!kind || !kind->check_gpu_request || !spec_.trial.embedded) return;
    const auto& fixed = spec_.space.fixed;
    bool all_cuda = fixed.contains("device") && fixed["device"] == "cuda";
    for (const auto& d : spec_.space.dims)
      if (d.name == "device") {
        all_cuda = !d.choices.empty();
        for (const auto& c : d.choices) all_cuda = all_cuda && c == "cuda";
      }
    if (!all_cuda) return;
    Field dev = StudyReader::field(StudyReader::field(trial_, "trainer"), "device");
    if (!dev) dev = StudyReader::field(StudyReader::field(root_, "fixed"), "device");
    if (!dev) dev = StudyReader::field(StudyReader::field(root_, "space"), "device");
    if (auto e = kind->check_gpu_request(spec_.backend.options, dev ? dev.path : std::string("trial.trainer")))
      r_.error(e->where, e->what, e->fix);
  }

  void read_name() {
    Field f = StudyReader::field(root_, "name");
    if (!r_.require(f, "add `name: my-study` at the top of the file")) return;
    auto s = r_.string(f);
    if (!s) return;
    if (!valid_study_name(*s)) {
      r_.error(f.path, fmt::format("'{}' is not a valid study name", *s),
               "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit");
      return;
    }
    spec_.name = *s;
  }

  void read_backend() {
    Field b = StudyReader::field(root_, "backend");
    // The keys: the shared ones and every kind's own (sched::backend_kinds()); a key of
    // another kind is refused below, naming the kinds that take it.
    std::vector<std::string_view> keys(std::begin(kBackendShared), std::end(kBackendShared));
    for (const auto& k : sched::backend_kinds()) keys.insert(keys.end(), k.option_keys.begin(), k.option_keys.end());
    if (!b || !r_.map(b, keys, /*null_is_empty=*/true)) return;
    if (Field k = StudyReader::field(b, "kind"))
      if (auto s = r_.word(k, sched::backend_kind_names())) spec_.backend.kind = *s;
    if (Field m = StudyReader::field(b, "max_concurrent"))
      if (auto v = r_.integer(m, 1, kIntMax)) spec_.backend.max_concurrent = int(*v);
    if (Field w = StudyReader::field(b, "pending_warn"))
      if (auto v = r_.number(w, 0, false)) spec_.backend.pending_warn_s = *v;
    read_backend_options(b);
  }

  // A kind's own keys live beside `kind:`: a key of another kind is refused here, naming
  // the kinds that take it; the kind reads, validates and words its own keys itself
  // (BackendKind::read_options, e.g. schedulers/slurm/study_options.hpp).
  void read_backend_options(const Field& b) {
    const sched::BackendKind* kind = sched::find_backend_kind(spec_.backend.kind);
    std::vector<std::string_view> other_keys;  // every kind's keys
    for (const auto& k : sched::backend_kinds()) other_keys.insert(other_keys.end(), k.option_keys.begin(), k.option_keys.end());
    for (std::string_view name : other_keys) {
      Field f = StudyReader::field(b, name);
      if (!f) continue;
      if (!kind || std::find(kind->option_keys.begin(), kind->option_keys.end(), name) == kind->option_keys.end()) {
        std::string takers;
        for (auto k : sched::kinds_taking(name)) takers += (takers.empty() ? "" : " or ") + std::string(k);
        r_.error(f.path, fmt::format("'{}' applies only to the {} backend", name, takers),
                 fmt::format("set `kind: {}`, or remove this key", sched::kinds_taking(name).front()));
      }
    }
    if (!kind || !kind->read_options) return;
    SectionReader section(r_, b);
    kind->read_options(section, spec_.backend.options, static_cast<std::size_t>(spec_.backend.max_concurrent));
  }

  void read_trial() {
    trial_ = StudyReader::field(root_, "trial");
    if (!r_.require(trial_, "add a `trial:` section with `trainer:` (dlsweep-train settings) or "
                            "`command: [prog, arg, ...]`") ||
        !r_.map(trial_, kTrialKeys)) {
      trial_.node = nullptr;  // so read_space sees no trainer section
      return;
    }
    Field trainer = StudyReader::field(trial_, "trainer");
    Field command = StudyReader::field(trial_, "command");
    if (trainer && command) {
      r_.error(command.path, "both trial.trainer and trial.command are set",
               "keep trainer: to run dlsweep-train, or command: to run your own program");
    } else if (!trainer && !command) {
      r_.error(trial_.path, "trial needs `trainer:` or `command:`",
               "add `trainer: {model: mlp}` to run dlsweep-train, or `command: [prog, arg, ...]`");
    }
    spec_.trial.embedded = !command || trainer;
    if (command && !trainer) {
      has_command_ = true;
      read_command(command);
    }
    if (Field f = StudyReader::field(trial_, "ranks")) {
      ranks_path_ = f.path;
      if (auto v = r_.integer(f, 1, kIntMax)) spec_.trial.ranks = int(*v);
    }
    if (Field f = StudyReader::field(trial_, "launcher")) {
      if (auto v = r_.word(f, sched::kLaunchers)) spec_.trial.launcher = *v;
      if (!has_command_)
        r_.error(f.path, "the embedded trainer is launched by dlsweep (MPI)",
                 "remove trial.launcher; it is for your own program (trial.command)");
    }
    if (Field f = StudyReader::field(trial_, "timeout"))
      if (auto v = r_.number(f, 0, /*min_exclusive=*/true)) spec_.trial.timeout_s = *v;
    if (Field f = StudyReader::field(trial_, "max_retries"))
      if (auto v = r_.integer(f, 0, kIntMax)) spec_.trial.max_retries = int(*v);
    if (Field f = StudyReader::field(trial_, "fail_fast"))
      if (auto v = r_.integer(f, 0, kIntMax)) spec_.trial.fail_fast = int(*v);
    if (Field f = StudyReader::field(trial_, "unread_params")) {
      if (!f->is_array()) r_.wrong_type(f, "a list of parameter names", "write e.g. `unread_params: [notes, tag]`");
      else
        for (std::size_t i = 0; i < f->size(); ++i)
          if (auto s = r_.string(StudyReader::item(f, i))) spec_.trial.unread_params.push_back(*s);
    }
    if (Field f = StudyReader::field(trial_, "env")) read_env(f);
  }

  void read_command(const Field& f) {
    if (f->is_string()) {
      r_.error(f.path, "command is a single string",
               "write it as a list: [prog, arg, ...] (dlsweep runs no shell)");
      return;
    }
    if (!r_.list(f, "write command: [prog, arg, ...]")) return;
    if (f->empty()) {
      r_.error(f.path, "command is empty", "write command: [prog, arg, ...]");
      return;
    }
    for (std::size_t i = 0; i < f->size(); ++i) {
      Field a = StudyReader::item(f, i);
      auto s = r_.string(a);
      if (!s) continue;
      if (s->empty()) r_.error(a.path, "an empty argument", "remove it, or give its text");
      spec_.trial.command.push_back(*s);
    }
  }

  void read_env(const Field& f) {
    if (!r_.any_map(f, /*null_is_empty=*/true) || f->is_null()) return;
    for (const auto& [name, value] : f->items()) {
      Field v = StudyReader::field(f, name);
      if (!valid_env_name(name)) {
        r_.error(v.path, fmt::format("'{}' is not a valid environment variable name", name),
                 "use letters, digits and '_', starting with a letter or '_'");
        continue;
      }
      if (value.is_primitive() && !value.is_null()) spec_.trial.env[name] = r_.scalar_text(v);
      else
        r_.wrong_type(v, "a single value", "write NAME: value (\"\" for an empty value)");
    }
  }

  void read_objective() { read_objectives(r_, root_, spec_.trial.embedded && trial_, spec_); }

  void read_search() {
    search_ = StudyReader::field(root_, "search");
    if (!search_ || !r_.any_map(search_, /*null_is_empty=*/true) || search_->is_null()) return;
    std::string algo;
    const auto names = search::sampler_names();
    if (Field a = StudyReader::field(search_, "algorithm")) {
      auto s = r_.word(a, std::span<const std::string_view>(names));
      if (!s) algorithm_ok_ = false;
      else spec_.search.algorithm = algo = *s;
    } else {
      algo = "grid";
    }
    const auto keys = section_keys(kSearchShared, algo, names, search::sampler_option_keys);
    r_.map(search_, with_foreign_keys(r_, search_, keys, algorithm_ok_ ? algo : std::string(), names,
                                      search::sampler_option_keys, "algorithm"));
    if (Field t = StudyReader::field(search_, "trials")) {
      if (auto v = r_.integer(t, 1, std::numeric_limits<std::int64_t>::max())) spec_.search.trials = *v;
      else trials_ok_ = false;
    }
    if (Field s = StudyReader::field(search_, "seed"))
      if (auto v = r_.integer(s, 0, std::numeric_limits<std::int64_t>::max())) spec_.search.seed = std::uint64_t(*v);
    if (Field w = StudyReader::field(search_, "warm_start")) {
      read_warm_start(r_, w, spec_);
      if (algorithm_ok_) check_warm_start_algorithm(r_, w.path, spec_);
    }
    for (const auto& [key, _] : search_->items())
      if (std::find(std::begin(kSearchShared), std::end(kSearchShared), key) == std::end(kSearchShared) &&
          std::find(keys.begin(), keys.end(), key) != keys.end())
        spec_.search.options[key] = to_plain_json(*StudyReader::field(search_, key));
  }

  void read_pruner() {
    Field p = StudyReader::field(root_, "pruner");
    if (!p || !r_.any_map(p)) return;
    Field kind = StudyReader::field(p, "kind");
    const auto names = search::pruner_names();
    std::string k;
    if (r_.require(kind, "add `kind: median` (or leave `pruner` out)"))
      if (auto s = r_.word(kind, std::span<const std::string_view>(names))) spec_.pruner.kind = k = *s;
    const auto keys = section_keys(kPrunerShared, k, names, search::pruner_option_keys);
    r_.map(p, with_foreign_keys(r_, p, keys, k, names, search::pruner_option_keys, "kind"));
    spec_.pruner.warmup = search::pruner_default_warmup(k.empty() ? "none" : k);
    if (Field n = StudyReader::field(p, "startup_trials"))
      if (auto v = r_.integer(n, 1, kIntMax)) spec_.pruner.startup_trials = *v;
    if (Field w = StudyReader::field(p, "warmup"))
      if (auto v = r_.number(w, 0, false)) spec_.pruner.warmup = *v;
    if (Field b = StudyReader::field(p, "by"))
      if (auto s = r_.word(b, kPrunerAxes)) spec_.pruner.by = *s;
    if (Field g = StudyReader::field(p, "group_by"); g && r_.list(g, "write group_by: [batch_size]")) {
      for (std::size_t i = 0;; ++i) {
        Field item = StudyReader::item(g, i);
        if (!item) break;
        if (auto s = r_.string(item)) {
          if (s->empty()) r_.error(item.path, "empty parameter name", "name a parameter of the study, e.g. batch_size");
          else {
            spec_.pruner.group_by.push_back(*s);
            group_by_paths_.push_back(item.path);
          }
        }
      }
    }
    // The kind's own keys go to the pruner as given; the shared ones normalised.
    auto& o = spec_.pruner.options;
    for (const auto& [key, _] : p->items())
      if (key != "kind" && std::find(keys.begin(), keys.end(), key) != keys.end())
        o[key] = to_plain_json(*StudyReader::field(p, key));
    o["by"] = spec_.pruner.by;
    o["warmup"] = spec_.pruner.warmup;
    o["group_by"] = spec_.pruner.group_by;
    if (k == "none" || k == "median" || k == "percentile") o["startup_trials"] = spec_.pruner.startup_trials;
    if (k.empty()) return;
    // What only the pruner knows (percentile's range, asha's resources, ...). The shared
    // keys were checked above with the reader's messages.
    if (auto made = search::make_pruner(k, o); !made)
      for (const auto& e : made.error()) {
        if (e.key == "by" || e.key == "warmup" || e.key == "startup_trials" || e.key.starts_with("group_by")) continue;
        r_.error(child_path(p.path, e.key.empty() ? "kind" : e.key), e.what, e.fix);
      }
  }

  // A misspelt group_by name would silently put every trial in one group.
  void check_group_by() {
    for (std::size_t i = 0; i < spec_.pruner.group_by.size(); ++i) {
      const std::string& name = spec_.pruner.group_by[i];
      bool known = spec_.space.fixed.contains(name);
      for (const auto& d : spec_.space.dims) known = known || d.name == name;
      if (!known)
        r_.error(group_by_paths_[i], fmt::format("'{}' is not a parameter of this study", name),
                 "name a key of `space` (e.g. batch_size) or of `fixed`");
    }
  }

  void check_search_fits_space(const std::vector<std::string>& dim_paths) {
    // Conditions (`when:`) first: samplers rely on them being well formed.
    for (const auto& e : search::check_conditions(spec_.space)) {
      const std::string dim = e.key.substr(0, e.key.find(".when"));
      std::string path = child_path("space", e.key);
      for (std::size_t i = 0; i < spec_.space.dims.size(); ++i)
        if (spec_.space.dims[i].name == dim) path = dim_paths[i] + e.key.substr(dim.size());
      r_.error(path, e.what, e.fix);
    }
    if (!algorithm_ok_) return;
    const std::string& algo = spec_.search.algorithm;
    if (search::sampler_is_unbounded(algo) && spec_.search.trials == 0 && trials_ok_) {
      r_.error(child_path(search_.path.empty() ? "search" : search_.path, "trials"),
               fmt::format("{} search needs a number of trials", algo), "add `trials: N` under search:");
    }
    if (algo == "grid") {
      for (std::size_t i = 0; i < spec_.space.dims.size(); ++i) {
        auto kind = spec_.space.dims[i].kind;
        if (kind == search::Dimension::Kind::uniform || kind == search::Dimension::Kind::log_uniform)
          r_.error(dim_paths[i], "a continuous range cannot be enumerated by grid search",
                   "grid search needs finite values: give a list, or use search.algorithm: random");
      }
      return;
    }
    for (const auto& e : complete_pbt(spec_)) r_.error(e.key, e.what, e.fix);  // pbt: generations, pruner, trainer
    for (const auto& e : complete_branch(spec_)) r_.error(e.key, e.what, e.fix);  // branch: points, end, trainer
    if (auto made = search::make_sampler(algo, spec_.space, spec_.search.seed, spec_.search.options); !made)
      for (const auto& e : made.error())
        r_.error(child_path(search_.path.empty() ? "search" : search_.path, e.key.empty() ? "algorithm" : e.key),
                 e.what, e.fix);
  }

  // Ranks per trial: trial.ranks, or a `ranks` parameter (space or fixed), not both; and what
  // the launcher and the Slurm request make of them, checked here rather than on the cluster.
  void check_ranks() {
    std::vector<std::int64_t> values;
    std::string where = ranks_path_.empty() ? "trial.ranks" : ranks_path_;
    bool from_param = false;
    for (const auto& d : spec_.space.dims) {
      if (d.name != "ranks") continue;
      from_param = true;
      where = "space.ranks";
      if (d.kind == search::Dimension::Kind::choice) {
        for (const auto& v : d.choices) {
          if (!v.is_number_integer() || v.get<std::int64_t>() < 1) {
            r_.error(where, fmt::format("ranks must be whole numbers >= 1, got {}", v.dump()), "write e.g. [1, 2, 4]");
            return;
          }
          values.push_back(v.get<std::int64_t>());
        }
      } else if (d.kind == search::Dimension::Kind::int_range) {
        if (d.int_low < 1) {
          r_.error(where, "ranks must be >= 1", "start the range at 1 or more");
          return;
        }
        for (auto v = d.int_low; v <= d.int_high && values.size() < 4096; v += std::max<std::int64_t>(1, d.int_step))
          values.push_back(v);
      } else {
        r_.error(where, "ranks must be a list of whole numbers or an int range", "write e.g. ranks: [1, 2, 4]");
        return;
      }
    }
    if (auto it = spec_.space.fixed.find("ranks"); it != spec_.space.fixed.end()) {
      from_param = true;
      where = "fixed.ranks";
      if (!it->is_number_integer() || it->get<std::int64_t>() < 1) {
        r_.error(where, fmt::format("ranks must be a whole number >= 1, got {}", it->dump()), "write e.g. ranks: 2");
        return;
      }
      values.push_back(it->get<std::int64_t>());
    }
    if (from_param && !ranks_path_.empty()) {
      r_.error(ranks_path_, fmt::format("ranks is set both here and in {}", where),
               "keep one: trial.ranks for every trial, or a `ranks` parameter to search over");
      return;
    }
    if (!from_param) values.push_back(spec_.trial.ranks);
    const sched::BackendKind* kind = sched::find_backend_kind(spec_.backend.kind);
    const bool slurm = kind && kind->batch_scheduler;
    const std::string& launcher = spec_.trial.launcher;
    if (!slurm && launcher == "srun")
      r_.error("trial.launcher", "srun starts ranks inside a Slurm allocation; the local backend has none",
               "use launcher: mpirun or torchrun here, or backend.kind: slurm");
    if (!slurm || !kind->check_ranks) return;
    if (auto e = kind->check_ranks(spec_.backend.options, values, launcher, where)) r_.error(e->where, e->what, e->fix);
  }

  StudyReader& r_;
  Field root_;
  Field trial_;
  bool has_command_ = false;
  std::string ranks_path_;
  Field search_;
  std::vector<std::string> group_by_paths_;
  bool algorithm_ok_ = true;
  bool trials_ok_ = true;
  StudySpec spec_;
};

}  // namespace

StudyResult parse_study(const std::string& text, StudyFormat format, const std::string& file) {
  std::vector<ValidationError> errors;
  auto tree = format == StudyFormat::yaml ? parse_yaml_tree(text, file, errors)
                                          : parse_json_tree(text, file, errors);
  if (!tree) return std::unexpected(std::move(errors));
  if (!tree->root.is_object()) {
    errors.push_back({file, "",
                      fmt::format("the top level must be a map of keys (name, trial, objective, ...), "
                                  "got {}",
                                  describe_value(tree->root)),
                      "start from an example in examples/"});
    return std::unexpected(std::move(errors));
  }
  StudyReader reader(file, *tree);
  StudySpec spec = StudyParser(reader, tree->root).parse();
  if (reader.error_count() > 0) {
    // File order reads best (YAML knows lines; errors without one concern the whole file).
    auto errors_found = reader.take_errors();
    std::stable_sort(errors_found.begin(), errors_found.end(),
                     [](const ValidationError& a, const ValidationError& b) { return a.line < b.line; });
    return std::unexpected(std::move(errors_found));
  }
  spec.source = file;
  std::error_code ec;
  spec.study_dir = std::filesystem::absolute(std::filesystem::path(file), ec).parent_path();
  return spec;
}

StudyResult load_study(const std::filesystem::path& file) {
  const std::string name = file.string();
  auto fail_with = [&](std::string what, std::string fix) {
    return StudyResult(std::unexpect, std::vector{ValidationError{name, "", std::move(what), std::move(fix)}});
  };
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  StudyFormat format;
  if (ext == ".yaml" || ext == ".yml") format = StudyFormat::yaml;
  else if (ext == ".json") format = StudyFormat::json;
  else
    return fail_with(fmt::format("cannot tell the format from the extension '{}'", ext),
                     "name the study file *.yaml, *.yml or *.json");
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    return fail_with("is a directory, not a study file", "give the path of a .yaml or .json file");
  // Refuse a huge file before reading it into memory (parse_study checks the text too).
  if (auto size = std::filesystem::file_size(file, ec); !ec)
    if (auto too_big = check_study_size(size, name)) return StudyResult(std::unexpect, std::vector{*too_big});
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail_with(fmt::format("cannot read the file: {}", std::strerror(errno)), "check the path");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return fail_with("error while reading the file", "check the file and the disk");
  return parse_study(text.str(), format, name);
}

}  // namespace dlsweep::orch
