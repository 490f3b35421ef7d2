// pbt_lineage.js — the report's card for a population-based training study (the model's
// "pbt": report/pbt_lineage_model.hpp): every trial is a point at its interval (x: where it
// starts on the interval's axis) and its member (y), coloured by the objective it reached in
// the interval; a line joins each trial to the one it continued from — solid when a member
// kept its own weights, dashed when it exploited a donor (took its checkpoint and params and
// explored) — and the winner's lineage is drawn thick in blue. Below, the winner's schedule
// interval by interval, what `dlsweep best` prints. Embedded after render.js
// (report/CMakeLists.txt), which calls dlsweepPbtLineage(state, root, m, helpers) with its
// helpers (el, card, chart, emptyNote, fmt, finite, baseOptions), so it draws like every card.
(function (global) {
  'use strict';

  const KEPT = '#adb5bd', EXPLOIT = '#f08c00', WINNER = '#1c7ed6';

  // Light (worst) to dark (best) blue-green by the objective's rank among the values drawn.
  function shade(values, maximize) {
    const sorted = values.slice().sort((a, b) => a - b);
    return (v) => {
      if (v === null || v === undefined || !isFinite(v)) return '#e03131';
      const pos = sorted.length > 1 ? sorted.indexOf(v) / (sorted.length - 1) : 1;
      const good = maximize ? pos : 1 - pos;
      return `hsl(${190 - 40 * good}, 70%, ${78 - 48 * good}%)`;
    };
  }

  function paramsText(p, h) {
    return Object.keys(p || {}).map((k) => `${k} ${h.fmt(p[k])}`).join(', ');
  }

  // The explore step in key order: "base_lr x0.8, batch_size resampled to 512" (common/pbt_link.hpp).
  function exploreText(l, h) {
    const f = l.factors || {}, r = l.resampled || {};
    return [...new Set([...Object.keys(f), ...Object.keys(r)])].sort()
      .map((k) => (k in r ? `${k} resampled to ${h.fmt(r[k])}` : `${k} x${h.fmt(f[k])}`)).join(', ');
  }

  function graph(state, c, pbt, m, h) {
    const links = (pbt.links || []).filter((l) => h.finite(l.start) && h.finite(l.member));
    if (!links.length) return h.emptyNote(c, 'pbt-lineage', 'no trial of the population has been created yet');
    const byTrial = new Map(links.map((l) => [l.trial, l]));
    const onChain = new Set(pbt.chain || []);
    const values = links.map((l) => l.value).filter((v) => h.finite(v));
    const color = shade(values, m.study.objective_mode === 'max');
    const datasets = [];
    for (const l of links) {
      const from = l.parent === null || l.parent === undefined ? null : byTrial.get(l.parent);
      if (!from) continue;
      const winner = onChain.has(l.trial) && onChain.has(from.trial);
      const exploit = l.exploit_from !== null && l.exploit_from !== undefined;
      datasets.push({
        label: exploit ? 'exploit' : 'kept', lineage: true,
        data: [{ x: from.start, y: from.member }, { x: l.start, y: l.member }],
        showLine: true, pointRadius: 0, borderWidth: winner ? 3 : 1.3,
        borderDash: exploit ? [5, 4] : [], borderColor: winner ? WINNER : exploit ? EXPLOIT : KEPT,
      });
    }
    datasets.push({
      label: 'trials', data: links.map((l) => ({ x: l.start, y: l.member, link: l })), showLine: false,
      pointRadius: links.map((l) => (l.trial === pbt.winner ? 8 : 5)),
      pointStyle: links.map((l) => (l.trial === pbt.winner ? 'star' : 'circle')),
      backgroundColor: links.map((l) => color(l.value)),
      borderColor: links.map((l) => (onChain.has(l.trial) ? WINNER : '#495057')), borderWidth: 1.2,
    });
    const opts = h.baseOptions(`${pbt.axis} (start of the interval)`, 'member');
    opts.scales.y.ticks = { stepSize: 1, precision: 0 };
    opts.scales.y.reverse = true;
    opts.interaction = { mode: 'nearest', intersect: true };
    opts.plugins.tooltip.filter = (it) => !it.dataset.lineage;
    opts.plugins.tooltip.callbacks = {
      label: (it) => {
        const l = it.raw.link;
        const how = l.exploit_from !== null && l.exploit_from !== undefined
          ? `exploited trial ${l.exploit_from} (member ${l.from_member})${exploreText(l, h) ? ', explored ' + exploreText(l, h) : ''}`
          : l.parent !== null && l.parent !== undefined ? `continued trial ${l.parent}` : 'from scratch';
        return `trial ${l.trial} (member ${l.member}, generation ${l.generation}, ${l.state}): ` +
          `${m.study.objective_metric} ${h.fmt(l.value)}; ${paramsText(l.params, h)}; ${how}`;
      },
    };
    return h.chart(state, c, 'pbt-lineage', { type: 'scatter', data: { datasets }, options: opts }, true);
  }

  function schedule(pbt, m, h) {
    const byTrial = new Map((pbt.links || []).map((l) => [l.trial, l]));
    const rows = (pbt.chain || []).map((n) => byTrial.get(n)).filter(Boolean);
    const names = rows.length ? Object.keys(rows[0].params || {}) : [];
    const head = h.el('tr', {}, h.el('th', { text: pbt.axis }), h.el('th', { text: 'trial' }), h.el('th', { text: 'member' }),
      ...names.map((k) => h.el('th', { text: k })), h.el('th', { text: m.study.objective_metric }), h.el('th', { text: 'weights from' }));
    const body = h.el('tbody');
    for (const l of rows)
      body.append(h.el('tr', { 'data-trial': String(l.trial) },
        h.el('td', { text: `[${h.fmt(l.start)}, ${h.fmt(l.end)})` }), h.el('td', { class: 'num', text: String(l.trial) }),
        h.el('td', { class: 'num', text: String(l.member) }),
        ...names.map((k) => h.el('td', { class: 'num', text: h.fmt(l.params[k]) })),
        h.el('td', { class: 'num', text: h.fmt(l.value) }),
        h.el('td', { text: l.exploit_from !== null && l.exploit_from !== undefined ? `trial ${l.exploit_from} (exploit)`
          : l.parent !== null && l.parent !== undefined ? `trial ${l.parent}` : 'scratch' })));
    return h.el('div', { class: 'tablewrap' },
      h.el('table', { class: 'scaling pbt-schedule', 'data-rows': String(rows.length) }, h.el('thead', {}, head), body));
  }

  function pbtLineage(state, root, m, h) {
    const pbt = m.pbt;
    if (!pbt || !Array.isArray(pbt.links)) return;
    const c = h.card(root, 'pbt-lineage', 'Population lineage (PBT)',
      `${pbt.population} members, ${pbt.generations} intervals. Each point is a trial: one interval of one member, ` +
      'coloured by the objective it reached (darker is better). A solid grey line: the member kept its own weights; ' +
      'dashed orange: it was in the bottom quantile and took a top member\'s checkpoint and params, then explored ' +
      '(tooltips give the factors, and the values resampled from their distribution). In blue, the lineage of the winner (the star, the last interval\'s best): its ' +
      'schedule, which `dlsweep best --write-schedule` replays as one fixed run.');
    graph(state, c, pbt, m, h);
    if ((pbt.chain || []).length) c.append(schedule(pbt, m, h));
  }

  global.dlsweepPbtLineage = pbtLineage;
})(typeof window !== 'undefined' ? window : this);
