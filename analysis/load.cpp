// load.cpp — reads one study from the database into a StudyData (the only db/ caller in
// analysis/). Two reads: the trial_summary view (outcomes) and the eval/final metrics of
// every trial's current attempt, long form, pivoted here into EvalPoints.
#include "analysis/load.hpp"

#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "common/stored_study.hpp"

namespace dlsweep::analysis {
namespace {

void set_metric(EvalPoint& p, const std::string& name, std::optional<double> v) {
  if (name == "grad_noise_scale") p.noise_scale = v;
  else if (name == "grad_norm_sq") p.grad_norm_sq = v;
  else if (name == "grad_trace_sigma") p.trace_sigma = v;
  else if (name == "time_compute_s") p.t_compute_s = v;
  else if (name == "time_data_s") p.t_data_s = v;
  else if (name == "time_allreduce_exposed_s") p.t_allreduce_s = v;
  else if (name == "time_eval_s") p.t_eval_s = v;
  else if (name == "samples_per_s") p.samples_per_s = v;
  else if (name == "lr") p.lr = v;
  else if (name == "batch_size") p.batch = v;
}

// A program without a batch_size parameter may report its batch as the metric batch_size
// (as the report reads it): one value throughout is the trial's batch, several a ramp.
void batch_from_metric(TrialData& t) {
  if (t.batch > 0 || t.batch_ramp || t.params.contains("batch_size")) return;
  std::optional<double> first;
  for (const auto& p : t.curve) {
    if (!p.batch) continue;
    if (!first) first = p.batch;
    else if (*p.batch != *first) {
      t.batch_ramp = true;
      return;
    }
  }
  if (first && *first >= 1 && std::floor(*first) == *first) t.batch = static_cast<std::int64_t>(*first);
}

int int_param(const nlohmann::json& params, const char* key, int otherwise) {
  if (params.contains(key) && params[key].is_number()) return std::max(1, params[key].get<int>());
  return otherwise;
}

}  // namespace

Result<StudyData> load_study(const db::Storage& storage, const std::string& name) {
  auto row = storage.find_study(name);
  if (!row) return std::unexpected(row.error());
  if (!*row) {
    // Named like every other verb's error: the study, and the ones this database holds.
    std::string known;
    if (auto all = storage.list_studies(); all)
      for (const auto& s : *all) known += (known.empty() ? "" : ", ") + s.name;
    return fail_as(ErrorKind::not_found, "no study named '" + name + "'", "study",
                   known.empty() ? "the database holds no study yet: run `dlsweep submit STUDY` first"
                                 : "known studies: " + known);
  }
  const db::StudyRow& st = **row;
  StudyData study;
  study.name = st.name;
  study.metric = st.objective_metric;
  study.mode = st.objective_mode;
  study.target = st.objective_target;
  auto spec = read_stored_study(st.spec_json, st.name);
  if (!spec) return std::unexpected(spec.error());
  study.trainer = spec->trainer;
  study.objectives = spec->objectives;
  study.constraints = spec->constraints;
  // objective.rank_by; a pbt study ranks by final report whatever it says (study/ refuses `best` there).
  study.rank_final = spec->rank_final() || spec->algorithm == "pbt";

  auto sums = storage.summaries(st.id);
  if (!sums) return std::unexpected(sums.error());
  std::map<std::int64_t, std::size_t> index;  // trial id -> position in study.trials
  for (const auto& s : *sums) {
    TrialData t;
    t.number = s.number;
    t.state = s.state;
    t.message = s.message;
    t.params = s.params;
    if (s.params.contains("batch_size") && s.params["batch_size"].is_number_integer())
      t.batch = s.params["batch_size"].get<std::int64_t>();
    if (s.params.contains("batch_ramp") && s.params["batch_ramp"].is_string())
      t.batch_ramp = s.params["batch_ramp"].get<std::string>() != "none" && !s.params["batch_ramp"].get<std::string>().empty();
    t.ranks = trial_ranks(*spec, s.params);
    t.threads = int_param(s.params, "threads", 1);
    t.steps_to_target = s.steps_to_target;
    t.samples_to_target = s.samples_to_target;
    t.time_to_target_s = s.time_to_target_s;
    t.best_value = s.best_value;
    t.samples_per_s = s.samples_per_s;
    t.figures.ranks = t.ranks;
    if (s.steps_to_target) t.figures.steps_to_target = double(*s.steps_to_target);
    if (s.samples_to_target) t.figures.samples_to_target = double(*s.samples_to_target);
    t.figures.time_to_target_s = s.time_to_target_s;
    t.figures.wall_s = s.wall_s;
    index[s.trial_id] = study.trials.size();
    study.trials.push_back(std::move(t));
  }
  auto times = storage.trial_times(st.id);
  if (!times) return std::unexpected(times.error());
  for (const auto& [id, when] : *times)
    if (auto i = index.find(id); i != index.end()) study.trials[i->second].ended_at = when.ended_at;

  // study ids are integers of ours: formatting one into the SQL text is safe.
  auto q = storage.query(fmt::format(
      "SELECT m.trial_id, m.seq, m.kind, m.step, m.epoch, m.samples, m.wall_s, m.name, m.value FROM metrics m "
      "JOIN trials t ON t.id = m.trial_id AND t.attempt = m.attempt "
      "WHERE t.study_id = {} AND m.kind IN ('eval', 'final') ORDER BY m.trial_id, m.seq",
      st.id));
  if (!q) return std::unexpected(q.error());
  std::int64_t cur_trial = -1, cur_seq = -1;
  EvalPoint* p = nullptr;
  for (const auto& r : q->rows) {
    const auto tid = r[0].get<std::int64_t>(), seq = r[1].get<std::int64_t>();
    auto it = index.find(tid);
    if (it == index.end()) continue;
    TrialData& t = study.trials[it->second];
    if (tid != cur_trial || seq != cur_seq) {
      cur_trial = tid, cur_seq = seq;
      t.curve.emplace_back();
      p = &t.curve.back();
      p->final = r[2] == "final";
      p->step = r[3].get<std::int64_t>();
      p->epoch = r[4].get<double>();
      p->samples = r[5].get<std::int64_t>();
      p->wall_s = r[6].get<double>();
    }
    const std::optional<double> v = r[8].is_number() ? std::optional<double>(r[8].get<double>()) : std::nullopt;
    const auto name = r[7].get<std::string>();
    if (name == study.metric) p->value = v;
    set_metric(*p, name, v);
    if (v) t.figures.add_metric(name, *v);
    t.figures.last_samples = double(p->samples);
    t.figures.last_eval_wall_s = p->wall_s;
  }
  for (auto& t : study.trials) batch_from_metric(t);
  return study;
}

Result<std::vector<BatchDecision>> load_batch_decisions(const db::Storage& storage, const std::string& study,
                                                        std::int64_t number) {
  auto st = storage.find_study(study);
  if (!st) return std::unexpected(st.error());
  if (!*st) return std::vector<BatchDecision>{};
  std::vector<BatchDecision> all;
  std::int64_t seq = -1;
  int attempt = -1;
  auto visited = storage.for_each_curve_point((*st)->id, [&](const db::CurvePoint& p) -> Status {
    if (p.number != number || p.kind != "log" || !p.value) return {};
    if (p.name != "batch_size" && p.name != "grad_noise_scale") return {};
    if (p.seq != seq || p.attempt != attempt) {
      all.push_back(BatchDecision{p.attempt, p.step, p.epoch, 0, std::nullopt});
      seq = p.seq;
      attempt = p.attempt;
    }
    if (p.name == "batch_size") all.back().batch = static_cast<std::int64_t>(*p.value);
    else if (*p.value > 0) all.back().noise_scale = *p.value;
    return {};
  });
  if (!visited) return std::unexpected(visited.error());
  // Only records that chose a batch, of the latest attempt (a retry decides again).
  int latest = -1;
  for (const auto& d : all)
    if (d.batch > 0) latest = std::max(latest, d.attempt);
  std::vector<BatchDecision> out;
  for (const auto& d : all)
    if (d.batch > 0 && d.attempt == latest) out.push_back(d);
  return out;
}

}  // namespace dlsweep::analysis
