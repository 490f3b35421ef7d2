// plan_validation.cpp — how good is `dlsweep plan`'s prediction of multi-rank time to target?
// For every COMPLETE trial of the multi-rank study (--two) that reached the target, predicts
// its time to target from the 1-rank study (--one) and prints measured vs predicted:
//   fit   : S(B) from the 1-rank batch-size model (what `dlsweep plan` uses)
//   traj  : the steps to target of the 1-rank trial with the same parameters (data
//           parallelism keeps the trajectory), i.e. the timing model alone
// Both with the 1-rank step-time model for compute; the per-step exposed allreduce, the
// evaluation time and the startup at N ranks come from the OTHER multi-rank trials
// (leave-one-out), or, in the "1-rank only" columns, from the model's rules for unmeasured
// N (allreduce free, evaluation split over N, 1-rank startup).
// usage: bench_plan_validation --db DB --one STUDY --two STUDY
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "analysis/goodput.hpp"
#include "analysis/load.hpp"
#include "analysis/stats.hpp"
#include "analysis/target_table.hpp"
#include "db/storage.hpp"

using namespace dlsweep;
using namespace dlsweep::analysis;

int main(int argc, char** argv) {
  CLI::App app{"predict multi-rank time to target from 1-rank trials and compare with measured"};
  std::string db, one_name, two_name;
  app.add_option("--db", db)->required();
  app.add_option("--one", one_name, "the 1-rank study")->required();
  app.add_option("--two", two_name, "the multi-rank study")->required();
  CLI11_PARSE(app, argc, argv);
  auto st = db::Storage::open_readonly(db);
  if (!st) return fmt::print(stderr, "{}\n", st.error().message()), 1;
  auto one = load_study(**st, one_name);
  auto two = load_study(**st, two_name);
  if (!one || !two) return fmt::print(stderr, "{}\n", (!one ? one : two).error().message()), 1;

  std::vector<BatchPoint> pts;
  const auto table = target_table(*one);
  for (const auto* r : table.reaching_rows()) pts.push_back({static_cast<double>(r->batch), r->steps->mean});
  auto fit = fit_batch_model(pts);
  if (!fit) return fmt::print(stderr, "{}\n", fit.error().message()), 1;
  auto model1 = fit_step_time(step_samples(*one));
  if (!model1) return fmt::print(stderr, "{}\n", model1.error().message()), 1;
  fmt::print("1-rank batch-size model: S_min {:.4g}, B_crit {:.4g} ({:.4g} .. {:.4g}), {} batch sizes\n", fit->s_min,
             fit->b_crit, fit->b_crit_lo, fit->b_crit_hi, fit->points);
  fmt::print("1-rank compute model: {:.4g} s + {:.4g} s x per-rank batch ({} trials, RMS rel. residual {:.1f}%)\n",
             model1->a_c, model1->b_c, model1->compute_points, model1->compute_rms_rel * 100);

  const auto samples2 = step_samples(*two);
  fmt::print("\n{:>6} {:>6} {:>6} {:>10} | {:>10} {:>7} | {:>10} {:>7} | {:>12} {:>7}\n", "trial", "batch", "ranks",
             "measured", "pred(fit)", "err", "pred(traj)", "err", "1-rank only", "err");
  std::vector<double> err_fit, err_traj, err_only;
  for (const auto& t : two->trials) {
    if (!t.complete() || !t.reached() || t.batch <= 0) continue;
    // The 1-rank trial with the same parameters. With a constant LR after warmup the
    // trajectory up to the target does not depend on the run's length: epochs may differ.
    auto key = [](const nlohmann::json& params) {
      auto k = config_key(params);
      if (k.value("decay", std::string("constant")) == "constant") k.erase("epochs");
      return k;
    };
    const TrialData* twin = nullptr;
    for (const auto& u : one->trials)
      if (u.complete() && u.reached() && key(u.params) == key(t.params)) twin = &u;
    if (!twin && std::getenv("PLAN_VALIDATION_DEBUG")) fmt::print(stderr, "no 1-rank twin for {}\n", key(t.params).dump());
    // Leave-one-out multi-rank overheads.
    StepTimeModel m = *model1;
    std::vector<double> ar, ev, starts;
    for (const auto& s : samples2)
      if (s.trial != t.number && s.ranks == t.ranks) ar.push_back(s.allreduce_s), ev.push_back(s.eval_s), starts.push_back(s.start_s);
    if (!ar.empty()) {
      m.allreduce_measured = {{t.ranks, summarize(ar).mean}};
      m.eval_measured[t.ranks] = summarize(ev).mean;
      m.start_s = summarize(starts).mean;
    }
    const double measured = *t.time_to_target_s;
    const auto pf = predict(*fit, m, static_cast<double>(t.batch), t.ranks);
    auto rel = [&](double p) { return (p - measured) / measured; };
    std::string traj = "-", traj_err = "-", only = "-", only_err = "-";
    if (twin) {
      const auto pt = predict_with_steps(static_cast<double>(*twin->steps_to_target), m, static_cast<double>(t.batch),
                                         t.ranks, fit->b_crit);
      const auto po = predict_with_steps(static_cast<double>(*twin->steps_to_target), *model1,
                                         static_cast<double>(t.batch), t.ranks, fit->b_crit);
      traj = fmt::format("{:.1f}", pt.time_s);
      traj_err = fmt::format("{:+.0f}%", rel(pt.time_s) * 100);
      only = fmt::format("{:.1f}", po.time_s);
      only_err = fmt::format("{:+.0f}%", rel(po.time_s) * 100);
      err_traj.push_back(std::abs(rel(pt.time_s)));
      err_only.push_back(std::abs(rel(po.time_s)));
    }
    err_fit.push_back(std::abs(rel(pf.time_s)));
    fmt::print("{:>6} {:>6} {:>6} {:>9.1f}s | {:>9.1f}s {:>+6.0f}% | {:>10} {:>7} | {:>12} {:>7}\n", t.number, t.batch,
               t.ranks, measured, pf.time_s, rel(pf.time_s) * 100, traj, traj_err, only, only_err);
  }
  if (err_fit.empty()) return fmt::print(stderr, "no multi-rank trial reached the target\n"), 1;
  fmt::print("\nmean absolute error: pred(fit) {:.0f}%, pred(traj) {:.0f}%, 1-rank only {:.0f}% over {} trials\n",
             summarize(err_fit).mean * 100, err_traj.empty() ? 0 : summarize(err_traj).mean * 100,
             err_only.empty() ? 0 : summarize(err_only).mean * 100, err_fit.size());
  return 0;
}
