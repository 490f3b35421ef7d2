// render.js — draws every chart of a dlsweep report from the report model
// (report/report_model.hpp documents its keys) with Chart.js 3 (the global `Chart`): the
// helpers every card draws with, the header, and which cards a study gets in which order. The
// cards are in their own files, embedded after this one (report/CMakeLists.txt, one script):
// training_curves.js, batch_model.js, grouped_fit.js, throughput.js, parameters.js,
// pareto_front.js, pbt_lineage.js, branch_cbs.js, trial_table.js.
//
// How `dlsweep serve` uses it: load Chart.js and this file, fetch the model JSON from the
// server and call `render(model, rootElement)`; on each update call it again with the new
// model. render() is idempotent: it destroys the charts it made in `root` before drawing,
// and keeps the user's choices (hidden trials, hidden states, table sort) on
// `root.__dlsweep`, so an update does not undo them.
//
// For tests: every chart is a <canvas data-chart="ID"> (Chart.getChart(canvas) gives its
// datasets); render() returns {ID: [points per dataset, ...]}, and the trial table carries
// data-rows. Charts that have nothing to draw show a sentence saying why (data-empty).
(function (global) {
  'use strict';

  const STATES = ['COMPLETE', 'RUNNING', 'PRUNED', 'FAILED', 'CANCELLED', 'QUEUED', 'WAITING'];
  // How a trial's state shows on the line charts (colour = batch size, dash = state).
  const DASH = { COMPLETE: [], RUNNING: [], PRUNED: [6, 4], FAILED: [2, 3], CANCELLED: [8, 3, 2, 3], QUEUED: [1, 4], WAITING: [1, 4] };
  const STATE_COLOR = { COMPLETE: '#2b8a3e', RUNNING: '#1c7ed6', PRUNED: '#e67700', FAILED: '#c92a2a', CANCELLED: '#868e96', QUEUED: '#adb5bd', WAITING: '#ced4da' };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c != null) e.append(c);
    return e;
  }

  const finite = (v) => typeof v === 'number' && isFinite(v);
  // Math.min(...xs) overflows the call stack on 100k+ values (500 trials x 300 points).
  function minMax(xs) {
    let lo = Infinity, hi = -Infinity;
    for (const x of xs) { if (x < lo) lo = x; if (x > hi) hi = x; }
    return [lo, hi];
  }

  function fmt(v, digits = 4) {
    if (v === null || v === undefined) return '';
    if (typeof v === 'number') {
      if (Number.isNaN(v)) return '';  // never "NaN" on the page
      if (!isFinite(v)) return v > 0 ? '+inf' : '-inf';
      if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
      return Number(v.toPrecision(digits)).toString();
    }
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  }

  // Colour of a batch size: log2 position between the smallest and largest batch, on a
  // blue -> green -> orange -> red ramp (perceptually ordered, readable on white).
  function batchColorFn(trials) {
    const bs = trials.map((t) => t.batch_size).filter((b) => finite(b) && b > 0);
    const [blo, bhi] = minMax(bs);
    const lo = Math.log2(blo), hi = Math.log2(bhi);
    return (b) => {
      if (!finite(b) || b <= 0 || !bs.length) return '#495057';
      const f = hi > lo ? (Math.log2(b) - lo) / (hi - lo) : 0.5;
      return `hsl(${Math.round(230 - 230 * f)}, 70%, ${Math.round(42 + 6 * Math.sin(Math.PI * f))}%)`;
    };
  }

  // Colour of a trial (studies without a batch size): the golden angle around the hue circle,
  // so neighbouring trial numbers differ and any count of trials stays distinguishable.
  function trialColor(number) {
    const n = finite(number) ? number : 0;
    return `hsl(${Math.round((n * 137.508) % 360)}, 65%, ${n % 2 ? 38 : 48}%)`;
  }

  // A trial's parameters as "name=value, ..." (the hover text); conditional ones it lacks are absent.
  function paramsText(t) {
    return Object.keys(t.params || {}).sort().map((k) => `${k}=${fmt(t.params[k])}`).join(', ');
  }

  // The hover of any point of a trial: number, attempts, params and value.
  function trialHover(t, m) {
    const lines = [`params: ${paramsText(t) || '(none)'}`];
    lines.push(`${m.study.objective_metric}: ${finite(t.value) ? fmt(t.value) : 'no value'} (${t.state})`);
    if (t.attempt > 0) lines.push(`attempts: ${t.attempt + 1}`);
    return lines;
  }

  // Chart.js plugin: horizontal/vertical reference lines and shaded x-bands, from
  // options.plugins.dlsweepMarks = {hlines: [{y, label, color}], vlines: [...], bands: [{from, to, color, label}]}.
  const marksPlugin = {
    id: 'dlsweepMarks',
    beforeDatasetsDraw(chart, args, opts) {
      const { ctx, chartArea: a, scales } = chart;
      const x = scales.x, y = scales.y;
      if (!a || !x || !y) return;
      ctx.save();
      for (const b of opts.bands || []) {
        const x0 = Math.max(a.left, x.getPixelForValue(b.from)), x1 = Math.min(a.right, x.getPixelForValue(b.to));
        if (!(x1 > x0)) continue;
        ctx.fillStyle = b.color;
        ctx.fillRect(x0, a.top, x1 - x0, a.bottom - a.top);
        ctx.fillStyle = '#495057';
        ctx.font = '11px sans-serif';
        ctx.fillText(b.label, x0 + 4, a.top + 12, x1 - x0 - 6);
      }
      ctx.lineWidth = 1.5;
      ctx.setLineDash([5, 4]);
      for (const l of opts.hlines || []) {
        const py = y.getPixelForValue(l.y);
        if (!(py >= a.top && py <= a.bottom)) continue;
        ctx.strokeStyle = l.color || '#212529';
        ctx.beginPath(); ctx.moveTo(a.left, py); ctx.lineTo(a.right, py); ctx.stroke();
        ctx.fillStyle = l.color || '#212529';
        ctx.font = '11px sans-serif';
        ctx.fillText(l.label, a.left + 4, py - 4);
      }
      for (const l of opts.vlines || []) {
        const px = x.getPixelForValue(l.x);
        if (!(px >= a.left && px <= a.right)) continue;
        ctx.strokeStyle = l.color || '#212529';
        ctx.beginPath(); ctx.moveTo(px, a.top); ctx.lineTo(px, a.bottom); ctx.stroke();
        ctx.fillStyle = l.color || '#212529';
        ctx.font = '11px sans-serif';
        ctx.fillText(l.label, px + 4, a.top + 26);
      }
      ctx.restore();
    },
  };

  function baseOptions(xTitle, yTitle, xType, yType, extra) {
    const o = {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      parsing: false,
      normalized: true,
      interaction: { mode: 'nearest', intersect: false },
      plugins: { legend: { display: false }, tooltip: { enabled: true } },
      scales: {
        x: { type: xType || 'linear', title: { display: true, text: xTitle } },
        y: { type: yType || 'linear', title: { display: true, text: yTitle } },
      },
    };
    return Object.assign(o, extra || {});
  }

  function card(root, id, title, note) {
    const c = el('section', { class: 'card', id: 'card-' + id },
      el('h2', { text: title }), note ? el('p', { class: 'note', text: note }) : null);
    root.append(c);
    return c;
  }

  function emptyNote(parent, id, why) {
    parent.append(el('p', { class: 'empty', 'data-chart': id, 'data-empty': why, text: 'Nothing to draw: ' + why }));
  }

  function chart(state, parent, id, config, tall) {
    const wrap = el('div', { class: tall ? 'plot tall' : 'plot' });
    const canvas = el('canvas', { 'data-chart': id, role: 'img', 'aria-label': id });
    wrap.append(canvas);
    parent.append(wrap);
    const ch = new Chart(canvas, config);
    state.charts.push(ch);
    state.counts[id] = ch.data.datasets.map((d) => d.data.length);
    return ch;
  }

  function trialLabel(t) {
    const b = finite(t.batch_size) ? ` B=${fmt(t.batch_size)}` : '';
    return `#${t.number}${b} ${t.state}`;
  }

  function isHidden(state, t) {
    return state.hiddenTrials.has(t.number) || state.hiddenStates.has(t.state);
  }

  function batchLegend(ctx) {
    const bs = [...new Set(ctx.m.trials.map((t) => t.batch_size).filter(finite))].sort((a, b) => a - b);
    if (!bs.length) return null;
    const l = el('div', { class: 'legend' }, el('span', { text: 'batch size: ' }));
    for (const b of bs) l.append(el('span', { class: 'swatch', style: `background:${ctx.color(b)}` }), el('span', { text: fmt(b) + ' ' }));
    return l;
  }

  function applyVisibility(state, m) {
    const byNumber = new Map(m.trials.map((t) => [t.number, t]));
    for (const ch of state.charts) {
      let changed = false;
      for (const d of ch.data.datasets) {
        if (d.trial === undefined) continue;
        const t = byNumber.get(d.trial);
        const h = t ? isHidden(state, t) : false;
        if (!!d.hidden !== h) { d.hidden = h; changed = true; }
      }
      if (changed) ch.update('none');
    }
    for (const item of state.root.querySelectorAll('[data-legend-trial]')) {
      const t = byNumber.get(Number(item.getAttribute('data-legend-trial')));
      item.style.opacity = t && isHidden(state, t) ? '0.35' : '';
    }
    for (const box of state.root.querySelectorAll('input[data-trial-toggle]')) {
      const t = byNumber.get(Number(box.getAttribute('data-trial-toggle')));
      box.checked = t ? !isHidden(state, t) : true;
    }
  }

  // The cards in their own files (report/<card>.js, embedded after this one) draw with these.
  const helpers = { el, card, chart, emptyNote, fmt, finite, minMax, baseOptions, marksPlugin, STATES, DASH, STATE_COLOR,
    trialColor, trialLabel, trialHover, isHidden, batchLegend, applyVisibility, render };

  // A card of its own file: global[name](state, root, m, helpers, ctx), when that file is there.
  function external(name) {
    return (state, root, m, ctx) => {
      if (typeof global[name] === 'function') global[name](state, root, m, helpers, ctx);
    };
  }

  const convergence = external('dlsweepConvergence'), batchOverTraining = external('dlsweepBatchOverTraining'),
    learningRate = external('dlsweepLearningRate');  // training_curves.js
  const toTarget = external('dlsweepToTarget'), noiseScale = external('dlsweepNoiseScale'),
    pareto = external('dlsweepComputePareto');  // batch_model.js
  const slice = external('dlsweepSlice'), parallel = external('dlsweepParallel'),
    history = external('dlsweepHistory');  // parameters.js
  const table = external('dlsweepTrialTable');  // trial_table.js
  const groupedFits = external('dlsweepGroupedFits');  // grouped_fit.js: B_crit per value of a categorical parameter
  const throughput = external('dlsweepThroughput');  // throughput.js: throughput vs batch and vs ranks
  const paretoFront = external('dlsweepParetoFront');  // pareto_front.js: several objectives, the front and hypervolume
  const pbtLineage = external('dlsweepPbtLineage');  // pbt_lineage.js: the lineage and the winner's schedule
  const branchCbs = external('dlsweepBranchCbs');  // branch_cbs.js: the critical batch over training

  // The one line that says which cards a study without a batch size does not get, and why.
  function hiddenCards(state, root, m) {
    const lrReported = Object.values(m.curves || {}).some((cv) => Array.isArray(cv.lr) && cv.lr.some(finite));
    const hidden = ['to-target', 'time-to-target', 'grouped-fit', 'noise-scale', 'throughput', 'pareto'].concat(lrReported ? [] : ['lr']);
    root.append(el('p', { class: 'note hidden-cards', 'data-hidden-cards': hidden.join(','),
      text: 'Not shown: the batch-size cards (steps, samples and time to target vs batch size, B_crit per value, gradient noise ' +
        `scale, throughput vs batch size, time to target vs compute${lrReported ? '' : ', learning rate used'}): ` +
        (m.batch_space.reason || 'the study has no batch size') + (lrReported ? '.' : '; and no trial reported the metric lr.') }));
  }

  function header(root, m) {
    const s = m.study;
    const counts = STATES.filter((k) => m.counts[k] > 0).map((k) => `${m.counts[k]} ${k}`).join(', ') || 'no trials';
    const target = finite(s.objective_target) ? ` ${s.objective_mode === 'max' ? '>=' : '<='} ${fmt(s.objective_target)}` : '';
    root.append(el('header', {},
      el('h1', { text: `dlsweep report: ${s.name}` }),
      el('p', { text: `objective: ${s.objective_mode} ${s.objective_metric}${target} · study ${s.state} · ${counts} · ` +
        (m.warm_start ? `warm start: ${m.warm_start.trials} trials of ${m.warm_start.studies.join(', ')} (not run) · ` : '') +
        `generated ${new Date(m.generated_at * 1000).toISOString().replace('T', ' ').slice(0, 19)} UTC` })));
  }

  function render(model, root) {
    if (!root) throw new Error('render(model, root): root element missing');
    const state = root.__dlsweep || (root.__dlsweep = { hiddenTrials: new Set(), hiddenStates: new Set(), sort: { key: 'number', dir: 1 } });
    for (const ch of state.charts || []) ch.destroy();
    Object.assign(state, { charts: [], counts: {}, model, root });
    root.textContent = '';
    root.classList.add('dlsweep-report');
    if (!model || model.version !== 1) {
      root.append(el('p', { class: 'empty', text: 'This report model has an unknown version; use the render.js of the same dlsweep.' }));
      return state.counts;
    }
    const m = model;
    // Cards by what the study has: without a batch size (batch_space.hide) the batch-size
    // model's cards are left out, and one line says which and why; trials get their own colours.
    const batch = !(m.batch_space && m.batch_space.hide);
    const ctx = { m, batch, color: batchColorFn(m.trials), trialColor };
    header(root, m);
    const lrReported = Object.values(m.curves || {}).some((cv) => Array.isArray(cv.lr) && cv.lr.some(finite));
    const parts = [convergence, batchOverTraining];
    if (!batch) parts.push(hiddenCards);
    parts.push(pbtLineage, branchCbs, paretoFront);
    if (batch) parts.push(toTarget, groupedFits, noiseScale, throughput);
    if (batch || lrReported) parts.push(learningRate);
    parts.push(slice, parallel);
    if (batch) parts.push(pareto);
    parts.push(history, table);
    for (const part of parts) part(state, root, m, ctx);
    root.setAttribute('data-rendered', String((state.renders = (state.renders || 0) + 1)));
    return state.counts;
  }

  global.render = render;
})(typeof window !== 'undefined' ? window : this);