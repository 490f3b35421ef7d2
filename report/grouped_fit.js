// grouped_fit.js — the report's "B_crit per value" cards: for each categorical parameter of
// the model's "grouped_fits" (report/report_analysis.hpp; e.g. optimizer, lr_rule), a table of
// B_crit with its interval per value, side by side, and a chart with one fitted S(B) curve
// (and its measured points) per value. Embedded after render.js (report/CMakeLists.txt), which
// calls dlsweepGroupedFits(state, root, m, helpers) with its own helpers (el, card, chart,
// emptyNote, fmt, finite, baseOptions), so it draws like every other card.
(function (global) {
  'use strict';

  const PALETTE = ['#1c7ed6', '#e8590c', '#2b8a3e', '#ae3ec9', '#c92a2a', '#0c8599', '#5c940d', '#868e96'];

  function intervalText(g, h) {
    if (!h.finite(g.b_crit)) return '';
    return `${h.fmt(g.b_crit_lo, 3)} .. ${h.fmt(g.b_crit_hi, 3)}`;
  }

  function table(gf, h) {
    const pct = Math.round(100 * (gf.groups.find((g) => h.finite(g.level)) || { level: 0.9 }).level);
    const head = el(h, 'tr', {}, ...[gf.param, 'B_crit', `${pct}% interval`, 'determined', 'batch sizes at target / run',
      'trials (COMPLETE)', `largest batch within ${h.fmt(gf.epoch_factor)}x the epochs of the smallest`, 'note']
      .map((t) => el(h, 'th', { text: t })));
    const body = el(h, 'tbody');
    for (const g of gf.groups) {
      const fitted = h.finite(g.b_crit);
      const largest = g.largest_batch_within_1_5x_epochs;
      const note = fitted ? (g.determined ? '' : (g.fit && g.fit.undetermined_reason) || 'B_crit not determined') : g.cannot_fit;
      body.append(el(h, 'tr', { 'data-value': g.label },
        el(h, 'td', { text: g.label }),
        el(h, 'td', { class: 'num', text: fitted ? h.fmt(g.b_crit, 4) : 'cannot fit' }),
        el(h, 'td', { class: 'num', text: intervalText(g, h) }),
        el(h, 'td', { text: fitted ? (g.determined ? 'yes' : 'no') : '' }),
        el(h, 'td', { class: 'num', text: `${g.fitted_batch_sizes} / ${g.batch_sizes}` }),
        el(h, 'td', { class: 'num', text: `${g.trials} (${g.complete})` }),
        el(h, 'td', { class: 'num', text: h.finite(largest)
          ? `${largest} (${h.fmt(g.largest_batch_epochs_ratio, 3)}x of batch ${g.epochs_reference_batch})` : '' }),
        el(h, 'td', { class: 'msg', style: 'white-space:normal;min-width:32ch', text: note || '', title: note || '' })));
    }
    return el(h, 'div', { class: 'tablewrap' },
      el(h, 'table', { class: 'scaling grouped-fit', 'data-param': gf.param, 'data-rows': String(gf.groups.length) },
        el(h, 'thead', {}, head), body));
  }

  function el(h, tag, attrs, ...children) { return h.el(tag, attrs, ...children); }

  function curves(state, c, gf, h) {
    const id = 'grouped-fit-' + gf.param;
    const datasets = [];
    gf.groups.forEach((g, i) => {
      const color = PALETTE[i % PALETTE.length];
      const pts = (g.points || []).filter((p) => h.finite(p.batch) && h.finite(p.steps)).map((p) => ({ x: p.batch, y: p.steps }));
      if (pts.length) {
        datasets.push({ label: `${g.label}: measured`, data: pts, showLine: false, pointRadius: 4,
          borderColor: color, backgroundColor: color, group: g.label });
      }
      const fit = (g.steps_fit || []).filter((p) => h.finite(p.batch_size) && h.finite(p.value)).map((p) => ({ x: p.batch_size, y: p.value }));
      if (fit.length) {
        datasets.push({ label: `${g.label}: S(B), B_crit ${h.fmt(g.b_crit, 3)}`, data: fit, pointRadius: 0,
          borderColor: color, backgroundColor: color, borderWidth: 1.6, group: g.label });
      }
    });
    if (!datasets.length) return h.emptyNote(c, id, 'no value of ' + gf.param + ' has a batch size that reached the target');
    const opts = h.baseOptions('batch size (log)', 'steps to target (log)', 'logarithmic', 'logarithmic');
    opts.plugins.legend = { display: true, position: 'bottom', labels: { boxWidth: 12 } };
    opts.plugins.tooltip.callbacks = { label: (it) => `${it.dataset.label}: ${h.fmt(it.parsed.y)} steps at batch ${h.fmt(it.parsed.x)}` };
    return h.chart(state, c, id, { type: 'line', data: { datasets }, options: opts });
  }

  function groupedFits(state, root, m, h) {
    for (const gf of m.grouped_fits || []) {
      if (!gf || !Array.isArray(gf.groups) || !gf.groups.length) continue;
      const c = h.card(root, 'grouped-fit-' + gf.param, `Critical batch per ${gf.param}`,
        `The batch-size model S(B) = S_min (1 + B_crit/B) fitted separately for each value of ${gf.param} ` +
        '(best seed group per batch size over the other parameters, COMPLETE trials; bootstrap interval), side by side: ' +
        'two values whose intervals do not overlap differ in B_crit. A value with fewer than 3 batch sizes at the target ' +
        `cannot be fitted and says so. The same numbers: dlsweep best --explain --group-by ${gf.param}.`);
      c.append(table(gf, h));
      curves(state, c, gf, h);
    }
  }

  global.dlsweepGroupedFits = groupedFits;
})(typeof window !== 'undefined' ? window : this);
