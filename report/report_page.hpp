// report_page.hpp — the self-contained HTML page of `dlsweep report`, and the assets it is
// made of, embedded into the binary at build time (report/CMakeLists.txt): Debian's
// Chart.js (libjs-chart.js, inlined; its comment URLs stripped) and report/render.js.
//
// How `dlsweep serve` uses it: serve chart_js(), render_js() and report_css() as its own
// static assets (or inline them as report_html does), fetch the model JSON from its endpoint
// and call `render(model, document.getElementById("root"))` from render.js on every update;
// render() is idempotent and keeps the user's toggles (hidden trials, table sort) on root.
//
// Invariant: report_html() output references no external URL (no http:, https:, //host);
// everything it needs is inline, so it works offline and as a mail attachment.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dlsweep::report {

/// Chart.js, as embedded (empty when this dlsweep was built without it: see available()).
std::string_view chart_js();
/// report/render.js followed by the card files it calls (training_curves.js, batch_model.js, grouped_fit.js,
/// throughput.js, parameters.js, pareto_front.js, pbt_lineage.js, branch_cbs.js, trial_table.js): defines
/// `render(model, rootElement)`.
std::string_view render_js();
/// report/report.css.
std::string_view report_css();
/// The Chart.js version embedded, e.g. "3.9.1" ("" when none).
std::string_view chart_js_version();

/// JSON text safe inside <script type="application/json">: "</" and "<!--" are escaped
/// ("<\/", "<\u0021--"), invalid UTF-8 replaced.
std::string json_for_script(const nlohmann::json& model);

/// The whole page: CSS, Chart.js, render.js and the model inline; renders on load.
std::string report_html(const nlohmann::json& model);

}  // namespace dlsweep::report
