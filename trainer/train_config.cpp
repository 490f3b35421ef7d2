#include "trainer/train_config.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/train_params.hpp"
#include "trainer/models/model_registry.hpp"

namespace dlsweep::trainer {

namespace {

using nlohmann::json;

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string unknown_key_fix(const std::string& key) {
  std::string best;
  std::size_t best_d = 3;  // suggest only close matches
  std::vector<std::string> names;
  for (const auto& p : param_table()) {
    names.push_back(p.name);
    std::size_t d = edit_distance(key, p.name);
    if (d < best_d) {
      best_d = d;
      best = p.name;
    }
  }
  if (!best.empty()) return fmt::format("did you mean '{}'? (dlsweep-train --help lists the parameters)", best);
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  return "remove it; known parameters: " + all;
}

}  // namespace

Result<TrainConfig> parse_train_config(const json& params, const std::string& where) {
  if (!params.is_object())
    return fail("params must be a JSON object of name: value pairs", where, "write e.g. {\"batch_size\": 256}");
  for (const auto& [key, value] : params.items()) {
    const ParamInfo* info = find_param(key);
    if (!info) return fail(fmt::format("unknown parameter '{}'", key), where + ": " + key, unknown_key_fix(key));
    if (auto s = check_param_value(*info, value); !s) return fail_in(s.error(), where + ": " + key);
  }
  // Every value below is present (explicit or default) and has passed check_param_value.
  auto get = [&](const std::string& key) -> const json& {
    auto it = params.find(key);
    return it != params.end() ? *it : find_param(key)->default_value;
  };
  TrainConfig c;
  c.model = get("model").get<std::string>();
  c.hidden = get("hidden").get<std::vector<std::int64_t>>();
  c.dataset = get("dataset").get<std::string>();
  c.data_dir = get("data_dir").get<std::string>();
  c.augment = get("augment").get<bool>();
  c.standardize = get("standardize").get<bool>();
  c.device = get("device").get<std::string>();
  c.precision = get("precision").get<std::string>();
  c.bf16_kernels = get("bf16_kernels").get<std::string>();
  c.deterministic = get("deterministic").get<bool>();
  c.train_subset = get("train_subset").get<std::int64_t>();
  c.test_subset = get("test_subset").get<std::int64_t>();
  c.epochs = get("epochs").get<double>();
  c.eval_every = get("eval_every").get<double>();
  c.batch_size = static_cast<std::int64_t>(get("batch_size").get<double>());
  c.base_batch = static_cast<std::int64_t>(get("base_batch").get<double>());
  c.base_lr = get("base_lr").get<double>();
  c.lr_rule = *schedule::parse_lr_rule(get("lr_rule").get<std::string>());
  c.warmup_epochs = get("warmup_epochs").get<double>();
  c.warmup_start = *schedule::parse_warmup_start(get("warmup_start").get<std::string>());
  c.warmup_steps = static_cast<std::int64_t>(get("warmup_steps").get<double>());
  c.decay = *schedule::parse_decay(get("decay").get<std::string>());
  c.decay_milestones = get("decay_milestones").get<std::vector<double>>();
  c.decay_factor = get("decay_factor").get<double>();
  c.lr_floor = get("lr_floor").get<double>();
  c.decay_power = get("decay_power").get<double>();
  c.batch_ramp = get("batch_ramp").get<std::string>();
  c.lr_schedule = get("lr_schedule").get<std::string>();
  c.stop_epoch = get("stop_epoch").get<double>();
  if (c.stop_epoch > c.epochs)
    return fail(fmt::format("stop_epoch {:g} is after the end of training (epochs {:g})", c.stop_epoch, c.epochs),
                where + ": stop_epoch", fmt::format("use a stop_epoch <= {:g}, or 0 for none", c.epochs));
  c.max_batch_size = static_cast<std::int64_t>(get("max_batch_size").get<double>());
  c.adaptive_max_batch = static_cast<std::int64_t>(get("adaptive_max_batch").get<double>());
  c.adaptive_min_batch = static_cast<std::int64_t>(get("adaptive_min_batch").get<double>());
  c.adaptive_every = static_cast<std::int64_t>(get("adaptive_every").get<double>());
  c.adaptive_lr = get("adaptive_lr").get<std::string>();
  c.adaptive_step_time = get("adaptive_step_time").get<std::vector<double>>();
  if (c.warmup_steps > 0 && c.warmup_epochs > 0)
    return fail("warmup_epochs and warmup_steps are both set", where + ": warmup_steps",
                "give the warmup length once: warmup_epochs OR warmup_steps");
  c.optimizer = get("optimizer").get<std::string>();
  c.momentum = get("momentum").get<double>();
  c.nesterov = get("nesterov").get<bool>();
  c.weight_decay = get("weight_decay").get<double>();
  c.momentum_correction = get("momentum_correction").get<bool>();
  c.decay_bias_norm = get("decay_bias_norm").get<bool>();
  c.beta1 = get("beta1").get<double>();
  c.beta2 = get("beta2").get<double>();
  c.adam_eps = get("adam_eps").get<double>();
  c.lamb_eps = get("lamb_eps").get<double>();
  c.lars_trust_coefficient = get("lars_trust_coefficient").get<double>();
  c.lars_eps = get("lars_eps").get<double>();
  c.lars_exclude_bias_norm = get("lars_exclude_bias_norm").get<bool>();
  c.larc_trust_coefficient = get("larc_trust_coefficient").get<double>();
  c.larc_mode = get("larc_mode").get<std::string>();
  c.larc_eps = get("larc_eps").get<double>();
  c.seed = static_cast<std::uint64_t>(get("seed").get<double>());
  c.branch_seed = static_cast<std::uint64_t>(get("branch_seed").get<double>());
  c.threads = static_cast<int>(get("threads").get<double>());
  c.ranks = static_cast<int>(get("ranks").get<double>());
  c.comm = get("comm").get<std::string>();
  c.bucket_mb = get("bucket_mb").get<double>();
  c.noise_scale_every = static_cast<std::int64_t>(get("noise_scale_every").get<double>());
  c.noise_scale_ema = get("noise_scale_ema").get<double>();
  c.checkpoint_every_s = get("checkpoint_every_s").get<double>();
  if (c.batch_ramp == "adaptive") {
    const std::int64_t lo = c.adaptive_min_batch > 0 ? c.adaptive_min_batch : c.batch_size;
    if (c.noise_scale_every == 0)
      return fail("batch_ramp adaptive decides from the gradient noise scale, but noise_scale_every is 0",
                  where + ": noise_scale_every", "set noise_scale_every >= 1 (e.g. 10) or use another batch_ramp");
    if (c.adaptive_min_batch > 0 && c.adaptive_min_batch > c.batch_size)
      return fail(fmt::format("adaptive_min_batch {} is above batch_size {}, where the run starts",
                              c.adaptive_min_batch, c.batch_size),
                  where + ": adaptive_min_batch", fmt::format("use an adaptive_min_batch <= {}, or 0", c.batch_size));
    if (c.adaptive_max_batch > 0 && c.adaptive_max_batch < std::max(lo, c.batch_size))
      return fail(fmt::format("adaptive_max_batch {} is below batch_size {}", c.adaptive_max_batch, c.batch_size),
                  where + ": adaptive_max_batch",
                  fmt::format("use an adaptive_max_batch >= {} (0 = 16 x batch_size)", c.batch_size));
  }
  return c;
}

Result<TrainConfig> load_train_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in)
    return fail("cannot open the parameter file", file.string(),
                "pass --params FILE or put params.json in the trial directory");
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return fail("not valid JSON", file.string(), "write one JSON object, e.g. {\"batch_size\": 256, \"base_lr\": 0.1}");
  return parse_train_config(j, file.string());
}

data::DataSpec data_spec(const TrainConfig& c) {
  data::DataSpec ds;
  ds.dataset = c.dataset;
  ds.dir = c.data_dir;
  ds.train_subset = c.train_subset;
  ds.test_subset = c.test_subset;
  ds.seed = c.seed;
  ds.augment = c.augment;
  ds.standardize = c.standardize;
  // Synthetic samples take the shape the model is designed for (throughput runs).
  const auto shape = models::default_input_shape(c.model);
  ds.synthetic_channels = shape.c;
  ds.synthetic_height = shape.h;
  ds.synthetic_width = shape.w;
  return ds;
}

std::vector<double> effective_milestones(const TrainConfig& c) {
  if (!c.decay_milestones.empty()) return c.decay_milestones;
  return {0.5 * c.epochs, 0.75 * c.epochs};
}

json to_json(const TrainConfig& c) {
  return json{{"model", c.model},
              {"hidden", c.hidden},
              {"dataset", c.dataset},
              {"data_dir", c.data_dir},
              {"augment", c.augment},
              {"standardize", c.standardize},
              {"device", c.device},
              {"precision", c.precision},
              {"bf16_kernels", c.bf16_kernels},
              {"deterministic", c.deterministic},
              {"train_subset", c.train_subset},
              {"test_subset", c.test_subset},
              {"epochs", c.epochs},
              {"eval_every", c.eval_every},
              {"batch_size", c.batch_size},
              {"base_batch", c.base_batch},
              {"base_lr", c.base_lr},
              {"lr_rule", schedule::to_string(c.lr_rule)},
              {"warmup_epochs", c.warmup_epochs},
              {"warmup_start", schedule::to_string(c.warmup_start)},
              {"warmup_steps", c.warmup_steps},
              {"decay", schedule::to_string(c.decay)},
              {"decay_milestones", c.decay_milestones},
              {"decay_factor", c.decay_factor},
              {"lr_floor", c.lr_floor},
              {"decay_power", c.decay_power},
              {"batch_ramp", c.batch_ramp},
              {"lr_schedule", c.lr_schedule},
              {"stop_epoch", c.stop_epoch},
              {"max_batch_size", c.max_batch_size},
              {"adaptive_max_batch", c.adaptive_max_batch},
              {"adaptive_min_batch", c.adaptive_min_batch},
              {"adaptive_every", c.adaptive_every},
              {"adaptive_lr", c.adaptive_lr},
              {"adaptive_step_time", c.adaptive_step_time},
              {"optimizer", c.optimizer},
              {"momentum", c.momentum},
              {"nesterov", c.nesterov},
              {"weight_decay", c.weight_decay},
              {"momentum_correction", c.momentum_correction},
              {"decay_bias_norm", c.decay_bias_norm},
              {"beta1", c.beta1},
              {"beta2", c.beta2},
              {"adam_eps", c.adam_eps},
              {"lamb_eps", c.lamb_eps},
              {"lars_trust_coefficient", c.lars_trust_coefficient},
              {"lars_eps", c.lars_eps},
              {"lars_exclude_bias_norm", c.lars_exclude_bias_norm},
              {"larc_trust_coefficient", c.larc_trust_coefficient},
              {"larc_mode", c.larc_mode},
              {"larc_eps", c.larc_eps},
              {"seed", c.seed},
              {"branch_seed", c.branch_seed},
              {"threads", c.threads},
              {"ranks", c.ranks},
              {"comm", c.comm},
              {"bucket_mb", c.bucket_mb},
              {"noise_scale_every", c.noise_scale_every},
              {"noise_scale_ema", c.noise_scale_ema},
              {"checkpoint_every_s", c.checkpoint_every_s}};
}

}  // namespace dlsweep::trainer
