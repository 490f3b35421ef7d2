// pareto_front.js — the report's cards for a study with several objectives (the model's
// "multi_objective": report/report_analysis.cpp pareto_model): the trials on the plane of the
// first two objectives with the Pareto front drawn through its points (feasible trials off
// the front in grey, infeasible ones in red), the front as a table with every objective, and
// the hypervolume of the front after each trial. Embedded after render.js
// (report/CMakeLists.txt), which calls dlsweepParetoFront(state, root, m, helpers) with its
// helpers (el, card, chart, emptyNote, fmt, finite, baseOptions), so it draws like every card.
(function (global) {
  'use strict';

  const FRONT = '#1c7ed6', OTHER = '#adb5bd', INFEASIBLE = '#e03131';

  function label(o) { return `${o.metric} (${o.mode})`; }

  function plane(state, c, mo, h) {
    const [ox, oy] = mo.objectives;
    const xy = (p) => ({ x: p.values[0], y: p.values[1], trial: p.trial });
    const ok = (p) => Array.isArray(p.values) && h.finite(p.values[0]) && h.finite(p.values[1]);
    const pts = (mo.points || []).filter(ok);
    const front = pts.filter((p) => p.front).map(xy).sort((a, b) => a.x - b.x);
    const datasets = [
      { label: 'Pareto front', data: front, showLine: true, stepped: false, pointRadius: 5, borderColor: FRONT,
        backgroundColor: FRONT, borderWidth: 1.5 },
      { label: 'feasible, dominated', data: pts.filter((p) => !p.front && p.feasible).map(xy), showLine: false,
        pointRadius: 3, borderColor: OTHER, backgroundColor: OTHER },
      { label: 'infeasible (breaks a constraint)', data: pts.filter((p) => !p.feasible).map(xy), showLine: false,
        pointRadius: 6, pointStyle: 'crossRot', borderWidth: 2, borderColor: INFEASIBLE, backgroundColor: INFEASIBLE },
    ].filter((d) => d.data.length);
    if (!datasets.length) return h.emptyNote(c, 'pareto-front', 'no COMPLETE trial has a value for both objectives yet');
    const opts = h.baseOptions(label(ox), label(oy));
    opts.interaction = { mode: 'nearest', intersect: true };
    opts.plugins.legend = { display: true, position: 'bottom', labels: { boxWidth: 12 } };
    opts.plugins.tooltip.callbacks = {
      label: (it) => `trial ${it.raw.trial}: ${ox.metric} ${h.fmt(it.parsed.x)}, ${oy.metric} ${h.fmt(it.parsed.y)}`,
    };
    return h.chart(state, c, 'pareto-front', { type: 'scatter', data: { datasets }, options: opts });
  }

  function table(mo, h) {
    const head = h.el('tr', {}, h.el('th', { text: 'trial' }), ...mo.objectives.map((o) => h.el('th', { text: label(o) })));
    const body = h.el('tbody');
    for (const p of mo.front || [])
      body.append(h.el('tr', { 'data-trial': String(p.trial) }, h.el('td', { class: 'num', text: String(p.trial) }),
        ...p.values.map((v) => h.el('td', { class: 'num', text: h.fmt(v) }))));
    return h.el('div', { class: 'tablewrap' },
      h.el('table', { class: 'scaling pareto-front', 'data-rows': String((mo.front || []).length) }, h.el('thead', {}, head), body));
  }

  function hypervolume(state, c, mo, h) {
    const pts = (mo.hypervolume || []).filter((p) => h.finite(p.trial) && h.finite(p.value)).map((p) => ({ x: p.trial, y: p.value }));
    if (!pts.length) return h.emptyNote(c, 'hypervolume', 'no trial has finished with a value for every objective yet');
    const opts = h.baseOptions('trial number', 'hypervolume of the front so far');
    opts.plugins.tooltip.callbacks = { label: (it) => `after trial ${it.parsed.x}: ${h.fmt(it.parsed.y)}` };
    return h.chart(state, c, 'hypervolume', { type: 'line', data: { datasets: [
      { label: 'hypervolume', data: pts, stepped: true, pointRadius: 0, borderColor: FRONT, borderWidth: 1.6 }] }, options: opts });
  }

  function paretoFront(state, root, m, h) {
    const mo = m.multi_objective;
    if (!mo || !Array.isArray(mo.objectives) || mo.objectives.length < 2) return;
    const names = mo.objectives.map(label).join(', ');
    const c = h.card(root, 'pareto-front', 'Pareto front',
      `The trials no other trial beats on every objective (${names}), feasible trials only, seed groups by their ` +
      'means; each point trades one objective for another. ' +
      (mo.objectives.length > 2 ? `Drawn on the first two objectives; the table has all ${mo.objectives.length}. ` : '') +
      'The same front: dlsweep best (--format json: front).');
    plane(state, c, mo, h);
    c.append(table(mo, h));
    const hv = h.card(root, 'hypervolume', 'Hypervolume over trials',
      'The volume the front of the feasible COMPLETE trials so far dominates, from a reference point 10% beyond the worst ' +
      'of them on each objective (the same point for every trial): ' +
      'it grows when a trial moves the front and stays flat while the search finds nothing better.');
    hypervolume(state, hv, mo, h);
  }

  global.dlsweepParetoFront = paretoFront;
})(typeof window !== 'undefined' ? window : this);
