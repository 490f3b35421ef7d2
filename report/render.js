// render.js — draws every chart of a dlsweep report from the report model
// (report/report_model.hpp documents its keys) with Chart.js 3 (the global `Chart`).
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

  // Chart.js plugin for the parallel-coordinates chart: one vertical axis per category
  // label, with its own range written at the top and bottom (options.plugins.dlsweepAxes.axes).
  const axesPlugin = {
    id: 'dlsweepAxes',
    afterDatasetsDraw(chart, args, opts) {
      const axes = opts.axes;
      if (!axes) return;
      const { ctx, chartArea: a, scales } = chart;
      ctx.save();
      ctx.strokeStyle = '#343a40';
      ctx.fillStyle = '#212529';
      ctx.font = '11px sans-serif';
      ctx.textAlign = 'center';
      axes.forEach((ax, i) => {
        const px = scales.x.getPixelForValue(i);
        ctx.beginPath(); ctx.moveTo(px, a.top); ctx.lineTo(px, a.bottom); ctx.stroke();
        for (const t of ax.ticks) {
          const py = scales.y.getPixelForValue(t.pos) + (t.pos >= 0.99 ? -5 : t.pos <= 0.01 ? 13 : 4);
          const w = ctx.measureText(t.label).width;
          ctx.fillStyle = 'rgba(255,255,255,0.85)';
          ctx.fillRect(px - w / 2 - 2, py - 10, w + 4, 13);
          ctx.fillStyle = '#212529';
          ctx.fillText(t.label, px, py);
        }
      });
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

  // FAILED trials whose objective or loss became NaN/inf (their message says "diverged").
function divergedTrials(m) {
  return m.trials.filter((t) => t.state === 'FAILED' && /^diverged/.test(t.message || ''));
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

  // ---- 1. convergence: objective vs step, samples, wall time
  function convergence(state, root, m, ctx) {
    const obj = m.study.objective_metric, target = m.study.objective_target;
    const c = card(root, 'convergence', ctx.batch ? `Convergence: ${obj} vs step, samples and wall time` : `Intermediate values: ${obj} of each trial`,
      (ctx.batch ? 'One line per trial, coloured by batch size (legend above). '
        : 'One line per trial, each trial its own colour (legend above: click a trial to hide or show it; hover a point for its trial, parameters and value). ') +
      'Line style by state: solid COMPLETE/RUNNING, dashed PRUNED, dotted FAILED, dash-dot CANCELLED. A retried trial shows every ' +
      'attempt (earlier attempts\' points as diamonds, no line joining two attempts); a trial with one report is a dot. Hide or show trials with the state boxes here or the ' +
      '"show" boxes of the trial table.' + (finite(target) ? ` Dashed black: the target ${fmt(target)}.` : ''));
    const ctl = el('div', { class: 'controls' }, el('span', { text: 'states: ' }));
    for (const s of STATES) {
      if (!(m.counts[s] > 0)) continue;
      const box = el('input', { type: 'checkbox', 'data-state-toggle': s });
      box.checked = !state.hiddenStates.has(s);
      box.addEventListener('change', () => {
        if (box.checked) state.hiddenStates.delete(s); else state.hiddenStates.add(s);
        applyVisibility(state, m);
      });
      const nDiverged = s === 'FAILED' ? divergedTrials(m).length : 0;
      ctl.append(el('label', { style: `color:${STATE_COLOR[s]}` }, box,
        ` ${s} (${m.counts[s]}${nDiverged ? `, ${nDiverged} diverged` : ''})`));
    }
    c.append(ctl, ctx.batch ? batchLegend(ctx) : trialLegend(state, m, ctx));
    const withCurve = m.trials.filter((t) => m.curves[t.number] && m.curves[t.number].objective.some(finite));
    if (!withCurve.length) {
      const nDiverged = divergedTrials(m).length;
      return emptyNote(c, 'convergence', nDiverged
        ? `no trial has a finite ${obj}: ${nDiverged} diverged (their ${obj} was NaN/inf, recorded as null)`
        : `no trial has reported ${obj} yet`);
    }
    const grid = el('div', { class: 'grid3' });
    c.append(grid);
    // An axis no trial reported (a program that reports no samples) is left out, and said.
    const axes = [['step', 'step'], ['samples', 'samples seen'], ['wall_s', 'wall time (s)']].filter(([key]) =>
      withCurve.some((t) => m.curves[t.number][key].some((x) => finite(x) && x !== 0)));
    const missing = ['step', 'samples', 'wall_s'].filter((k) => !axes.some(([key]) => key === k));
    if (missing.length) c.append(el('p', { class: 'note', 'data-note': 'convergence-axes',
      text: `Not drawn against ${missing.map((k) => (k === 'wall_s' ? 'wall time' : k)).join(' or ')}: no trial reported it (every record has 0).` }));
    for (const [key, label] of axes) {
      const datasets = withCurve.map((t) => {
        const cv = m.curves[t.number];
        const data = [];
        cv[key].forEach((x, i) => {
          if (finite(x) && finite(cv.objective[i])) data.push({ x, y: cv.objective[i], a: cv.attempt ? cv.attempt[i] : t.attempt });
        });
        const color = ctx.batch ? ctx.color(t.batch_size) : ctx.trialColor(t.number);
        const few = !ctx.batch && data.length <= 60;  // markers on short curves (per-epoch reports)
        return {
          label: trialLabel(t), data, trial: t.number, trialState: t.state,
          borderColor: color, backgroundColor: color,
          borderDash: DASH[t.state] || [], borderWidth: t.state === 'RUNNING' ? 2.5 : 1.4,
          // A curve of one point has no line: its marker is what shows it.
          pointRadius: data.map((p, i) => (data.length === 1 || (t.state === 'RUNNING' && i === data.length - 1) ? 4 : few ? 2.5 : 0)),
          pointStyle: data.map((p) => (finite(p.a) && p.a < t.attempt ? 'rectRot' : 'circle')),
          // Two attempts are not one line: no segment joins the last point of one and the first of the next.
          segment: { borderColor: (sc) => (sc.p0.raw && sc.p1.raw && sc.p0.raw.a !== sc.p1.raw.a ? 'rgba(0,0,0,0)' : undefined) },
          hidden: isHidden(state, t), spanGaps: true,
        };
      });
      // Steps span orders of magnitude across batch sizes: a log axis when they do.
      const [xlo, xhi] = minMax(datasets.flatMap((d) => d.data.map((p) => p.x)));
      const logX = key === 'step' && xlo > 0 && xhi / xlo >= 50;
      const opts = baseOptions(label + (logX ? ' (log)' : ''), obj, logX ? 'logarithmic' : 'linear');
      opts.plugins.dlsweepMarks = { hlines: finite(target) ? [{ y: target, label: 'target' }] : [] };
      const byNumber = new Map(m.trials.map((t) => [t.number, t]));
      opts.plugins.tooltip.callbacks = {
        label: (it) => `${it.dataset.label}${byNumber.get(it.dataset.trial).attempt > 0 ? ` attempt ${it.raw.a}` : ''}: ${obj} ${fmt(it.parsed.y)} at ${label} ${fmt(it.parsed.x)}`,
        afterLabel: (it) => trialHover(byNumber.get(it.dataset.trial), m),
      };
      opts.interaction = { mode: 'nearest', intersect: false, axis: 'xy' };
      opts.plugins.legend = { display: ctx.batch && withCurve.length <= 12, position: 'bottom', labels: { boxWidth: 12 } };
      chart(state, grid, 'convergence-' + key.replace('_s', ''), { type: 'line', data: { datasets }, options: opts, plugins: [marksPlugin] });
    }
  }

  // One entry per trial (studies without a batch size): its colour, number, state and
  // parameters (hover); a click hides or shows the trial on the line charts.
  function trialLegend(state, m, ctx) {
    if (!m.trials.length) return null;
    const l = el('div', { class: 'legend trial-legend', 'data-legend': 'trials' }, el('span', { text: 'trials: ' }));
    for (const t of m.trials) {
      const item = el('span', { class: 'legend-trial', 'data-legend-trial': String(t.number), title: trialHover(t, m).join('\n'),
        style: `cursor:pointer;margin-right:0.6em;${isHidden(state, t) ? 'opacity:0.35' : ''}`,
        onclick: () => {
          if (state.hiddenTrials.has(t.number)) state.hiddenTrials.delete(t.number); else state.hiddenTrials.add(t.number);
          applyVisibility(state, m);
        } },
        el('span', { class: 'swatch', style: `background:${ctx.trialColor(t.number)}` }),
        el('span', { text: `#${t.number} ${t.state}${m.curves[t.number] ? '' : ' (no reports)'}` }));
      l.append(item);
    }
    return l;
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

  // ---- 2 and 3. steps/samples/time to target vs batch size
  function analysisOf(m) { return m.analysis && m.analysis.available ? m.analysis : null; }

  // An undetermined B_crit (analysis: docs/math.md#when-b_crit-is-determined) shades no regime
  // and draws no B_crit line.
  const bCritKnown = (an) => !!an && an.determined !== false && finite(an.b_crit);

  function regimeBands(an) {
    if (!bCritKnown(an) || !Array.isArray(an.regimes)) return [];
    const colors = { perfect_scaling: 'rgba(43,138,62,0.08)', diminishing_returns: 'rgba(230,119,0,0.08)', maximal_parallelism: 'rgba(201,42,42,0.08)' };
    return an.regimes.filter((r) => finite(r.from) && finite(r.to)).map((r) => ({ from: r.from, to: r.to, color: colors[r.regime] || 'rgba(0,0,0,0.05)', label: r.label || r.regime }));
  }

  function toTarget(state, root, m, ctx) {
    const an = analysisOf(m);
    const target = m.study.objective_target;
    const fitNote = an ? `Curves: the fitted batch-size model (${an.method || 'least squares in log space'}); ` +
      `B_crit = ${fmt(an.b_crit, 3)}${an.b_crit_interval ? ` (${Math.round(100 * (an.level || 0.9))}% interval ${fmt(an.b_crit_interval[0], 3)} to ${fmt(an.b_crit_interval[1], 3)})` : ''}` +
      `${an.at_edge ? ' (at the edge of the searched range: a bound only)' : ''}; S_min = ${fmt(an.s_min, 3)} steps, E_min = ${fmt(an.e_min, 3)} samples; ` +
      (bCritKnown(an) ? 'shaded: the regimes (perfect scaling, diminishing returns, maximal data parallelism).'
        : `B_crit is NOT determined (${an.undetermined_reason || 'see best --explain'}), so no regime is shaded. To determine it: ${an.to_determine || 'run more batch sizes'}.`)
      : `No fitted curve: ${m.analysis && m.analysis.reason ? m.analysis.reason : 'no analysis'}.`;
    const c = card(root, 'to-target', 'Steps and samples to target vs batch size (log-log)',
      `Per batch size, the best trial over the other parameters (filled) and every trial that reached ${m.study.objective_metric} ` +
      `${m.study.objective_mode === 'max' ? '>=' : '<='} ${fmt(target)} (small, coloured by batch size). Trials that never reached ` +
      'it are counted below the charts. ' + fitNote);
    if (!finite(target)) {
      emptyNote(c, 'steps-to-target', 'the study has no objective target');
      return emptyNote(card(root, 'time-to-target', 'Time to target vs batch size'), 'time-to-target', 'the study has no objective target');
    }
    const grid = el('div', { class: 'grid2' });
    c.append(grid);
    for (const [key, bestKey, label, fitKey] of [['steps_to_target', 'steps', 'steps to target', 'steps_fit'], ['samples_to_target', 'samples', 'samples to target', 'samples_fit']]) {
      const id = key === 'steps_to_target' ? 'steps-to-target' : 'samples-to-target';
      const reached = m.trials.filter((t) => finite(t[key]) && finite(t.batch_size));
      if (!reached.length) { emptyNote(grid, id, 'no trial has reached the target yet'); continue; }
      // The points the batch-size model is fitted on (analysis/: best seed group of COMPLETE
      // trials per batch) when there are any, else the fastest trial per batch.
      const fitted = m.analysis && Array.isArray(m.analysis.points) && m.analysis.points.length;
      const best = (fitted ? m.analysis.points : m.per_batch).filter((b) => finite(b[bestKey])).map((b) => ({ x: b.batch_size, y: b[bestKey] }));
      const datasets = [
        { label: fitted ? 'best per batch (fitted points)' : 'best per batch', data: best, showLine: true, borderColor: '#212529', backgroundColor: '#212529', pointRadius: 5, borderWidth: 1 },
        { label: 'trials', data: reached.map((t) => ({ x: t.batch_size, y: t[key], n: t.number })), showLine: false, pointRadius: 2.5, backgroundColor: reached.map((t) => ctx.color(t.batch_size)), borderColor: 'transparent' },
      ];
      if (an && Array.isArray(an[fitKey]) && an[fitKey].length)
        datasets.push({ label: 'fit', data: an[fitKey].map((p) => ({ x: p.batch_size, y: p.value })), showLine: true, borderColor: '#c2255c', borderWidth: 2, pointRadius: 0 });
      const opts = baseOptions('batch size', label, 'logarithmic', 'logarithmic');
      opts.plugins.legend = { display: true, position: 'bottom', labels: { boxWidth: 12 } };
      opts.plugins.dlsweepMarks = { bands: regimeBands(an), vlines: bCritKnown(an) ? [{ x: an.b_crit, label: 'B_crit ' + fmt(an.b_crit, 3), color: '#c2255c' }] : [] };
      opts.plugins.tooltip.callbacks = { label: (it) => `B=${fmt(it.parsed.x)}: ${fmt(it.parsed.y)}${it.raw.n !== undefined ? ' (trial #' + it.raw.n + ')' : ''}` };
      chart(state, grid, id, { type: 'scatter', data: { datasets }, options: opts, plugins: [marksPlugin] });
    }
    const never = m.per_batch.filter((b) => b.trials > b.reached);
    if (never.length) c.append(el('p', { class: 'note', text: 'Never reached the target: ' + never.map((b) => `B=${fmt(b.batch_size)}: ${b.trials - b.reached} of ${b.trials}`).join(', ') + '.' }));

    const c3 = card(root, 'time-to-target', 'Time to target vs batch size',
      'Wall time until the objective first reached the target (the trial program\'s clock), every trial (small) and, per batch size, the mean of the seed group the charts above use (line; the fastest trial when no COMPLETE trial reached the target).');
    const reached = m.trials.filter((t) => finite(t.time_to_target_s) && finite(t.batch_size));
    if (!reached.length) return emptyNote(c3, 'time-to-target', 'no trial has reached the target yet');
    // The same points as the charts above: the best seed group per batch of COMPLETE trials
    // (its mean time) when the analysis has them, else the fastest trial per batch.
    const grouped = m.analysis && Array.isArray(m.analysis.points) && m.analysis.points.some((b) => finite(b.time_s));
    const best = (grouped ? m.analysis.points : m.per_batch).filter((b) => finite(b.time_s)).map((b) => ({ x: b.batch_size, y: b.time_s }));
    const opts = baseOptions('batch size', 'time to target (s)', 'logarithmic', 'logarithmic');
    opts.plugins.legend = { display: true, position: 'bottom', labels: { boxWidth: 12 } };
    opts.plugins.dlsweepMarks = { bands: regimeBands(an) };
    chart(state, c3, 'time-to-target', { type: 'scatter', options: opts, plugins: [marksPlugin], data: { datasets: [
      { label: grouped ? 'best per batch (seed-group mean, as above)' : 'best per batch', data: best, showLine: true, borderColor: '#212529', backgroundColor: '#212529', pointRadius: 5, borderWidth: 1 },
      { label: 'trials', data: reached.map((t) => ({ x: t.batch_size, y: t.time_to_target_s })), pointRadius: 2.5, backgroundColor: reached.map((t) => ctx.color(t.batch_size)), borderColor: 'transparent' },
    ] } });
  }

  // ---- 4. gradient noise scale over training
  function noiseScale(state, root, m, ctx) {
    const an = analysisOf(m);
    const ns = m.noise_scale;
    // No trial reported the metric: the chart is hidden, and the note says how a program reports it.
    if (ns && ns.reported === false) {
      const h = card(root, 'noise-scale', 'Gradient noise scale B_simple: not measured');
      return emptyNote(h, 'noise-scale', ns.note || 'no trial reported grad_noise_scale');
    }
    const c = card(root, 'noise-scale', 'Gradient noise scale B_simple over training',
      'B_simple = tr(Σ)/|G|² (McCandlish et al. 2018) as the trial reported it (metric grad_noise_scale), per trial, against samples seen; ' +
      (bCritKnown(an) ? `dashed: the fitted B_crit = ${fmt(an.b_crit, 3)}.` : 'no determined B_crit to compare with (see above).') +
      (an && an.noise && finite(an.noise.median_at_target) ? ` Median B_simple where the COMPLETE trials reached the target: ${fmt(an.noise.median_at_target, 3)} ` +
        `(${an.noise.trials} trials, range ${fmt(an.noise.lo, 3)} to ${fmt(an.noise.hi, 3)})${finite(an.noise.ratio_to_b_crit) ? `, ${fmt(an.noise.ratio_to_b_crit, 3)} x B_crit` : ''}.` : ''));
    c.append(batchLegend(ctx));
    const withNoise = m.trials.filter((t) => m.curves[t.number] && m.curves[t.number].noise_scale.some((v) => finite(v) && v > 0));
    if (!withNoise.length) return emptyNote(c, 'noise-scale', 'no trial reported grad_noise_scale (the embedded trainer does, with noise_scale_every > 0)');
    const datasets = withNoise.map((t) => {
      const cv = m.curves[t.number], data = [];
      cv.samples.forEach((x, i) => { if (finite(x) && finite(cv.noise_scale[i]) && cv.noise_scale[i] > 0) data.push({ x, y: cv.noise_scale[i] }); });
      return { label: trialLabel(t), data, trial: t.number, borderColor: ctx.color(t.batch_size), borderDash: DASH[t.state] || [], borderWidth: 1.3, pointRadius: 0, hidden: isHidden(state, t) };
    });
    const opts = baseOptions('samples seen', 'B_simple', 'linear', 'logarithmic');
    opts.plugins.dlsweepMarks = { hlines: bCritKnown(an) ? [{ y: an.b_crit, label: 'fitted B_crit', color: '#c2255c' }] : [] };
    chart(state, c, 'noise-scale', { type: 'line', data: { datasets }, options: opts, plugins: [marksPlugin] });
  }

  // ---- 4b. batch over training: the batch an adaptive trial (batch_ramp adaptive) chose at
  // each decision, and the B_simple it measured there, against the step (model: batch_over_training).
  function batchOverTraining(state, root, m, ctx) {
    const bot = m.batch_over_training;
    if (!bot || !Array.isArray(bot.trials) || !bot.trials.length) return;
    const c = card(root, 'batch-over-training', 'Batch size over training (adaptive trials)',
      `The global batch each trial with batch_ramp: adaptive chose at each decision (left, held until the next), and the gradient ` +
      'noise scale B_simple it measured there (right), against the step; one colour per trial (' +
      `${bot.trials.length === 1 ? 'trial' : 'trials'} ${bot.trials.map((n) => '#' + n).join(', ')}). A decision before the first noise estimate keeps the batch and has no B_simple.`);
    const byNumber = new Map(m.trials.map((t) => [t.number, t]));
    const grid = el('div', { class: 'grid2' });
    c.append(grid);
    for (const [key, id, ylabel] of [['batch_size', 'batch-over-training', 'global batch size'], ['grad_noise_scale', 'noise-over-training', 'B_simple']]) {
      const datasets = [];
      for (const n of bot.trials) {
        const cv = bot.curves[n], t = byNumber.get(n);
        if (!cv) continue;
        const data = [];
        cv.step.forEach((x, i) => { if (finite(x) && finite(cv[key][i]) && cv[key][i] > 0) data.push({ x, y: cv[key][i], e: cv.epoch[i], a: cv.attempt[i] }); });
        const color = trialColor(n);
        datasets.push({ label: t ? trialLabel(t) : '#' + n, data, trial: n, borderColor: color, backgroundColor: color,
          stepped: key === 'batch_size' ? 'after' : false, pointRadius: data.length === 1 ? 4 : 2, borderWidth: 1.5,
          hidden: t ? isHidden(state, t) : false });
      }
      if (!datasets.some((d) => d.data.length)) {
        emptyNote(grid, id, key === 'grad_noise_scale' ? 'no decision has a noise estimate yet (noise_scale_every > 0 gives one)' : 'no decision recorded yet');
        continue;
      }
      const opts = baseOptions('step', ylabel + ' (log)', 'linear', 'logarithmic');
      opts.plugins.legend = { display: true, position: 'bottom', labels: { boxWidth: 12 } };
      opts.plugins.tooltip.callbacks = { label: (it) => `${it.dataset.label}: ${ylabel} ${fmt(it.parsed.y, 4)} at step ${fmt(it.parsed.x)}` +
        (finite(it.raw.e) ? ` (epoch ${fmt(it.raw.e, 3)})` : '') };
      chart(state, grid, id, { type: 'line', data: { datasets }, options: opts });
    }
  }

  // ---- 5. throughput vs batch and vs ranks: report/throughput.js, embedded with this file.
  function throughput(state, root, m) {
    if (typeof global.dlsweepThroughput === 'function')
      global.dlsweepThroughput(state, root, m, { el, card, chart, emptyNote, fmt, finite, baseOptions });
  }

  // ---- 6. LR actually used vs step, best few trials
  function learningRate(state, root, m, ctx) {
    const c = card(root, 'lr', 'Learning rate used vs step (best trials)',
      `The LR the trainer reported with each evaluation, for the ${m.lr_trials.length} best trials by ${m.study.objective_metric}` +
      `${m.best && m.best.rank_by === 'final' ? ' (its final report: objective.rank_by final)' : ''}: ` +
      'warmup, decay and batch ramps show as the LR changes between evaluations.');
    const byNumber = new Map(m.trials.map((t) => [t.number, t]));
    const datasets = [];
    const palette = ['#1c7ed6', '#c92a2a', '#2b8a3e', '#e67700', '#7048e8', '#0c8599', '#d6336c', '#5c940d'];
    m.lr_trials.forEach((n, i) => {
      const cv = m.curves[n], t = byNumber.get(n);
      if (!cv || !t) return;
      const data = [];
      cv.step.forEach((x, j) => { if (finite(x) && finite(cv.lr[j])) data.push({ x, y: cv.lr[j] }); });
      if (data.length) datasets.push({ label: trialLabel(t), data, trial: n, borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length], stepped: false, pointRadius: 2, borderWidth: 1.5 });
    });
    if (!datasets.length) return emptyNote(c, 'lr', 'no trial reported the metric lr (the learning rate of the last update; a program reports it with its eval records)');
    const opts = baseOptions('step', 'learning rate');
    opts.plugins.legend = { display: true, position: 'bottom', labels: { boxWidth: 12 } };
    chart(state, c, 'lr', { type: 'line', data: { datasets }, options: opts });
  }

  // The objectives a chart is drawn for: the study's one objective (the trial's value), or, with
  // several (the model's multi_objective), each of them from the trials' value vectors. `tag`
  // suffixes the chart ids of a study with several objectives ("slice-x@val_acc").
  function objectiveViews(m) {
    const mo = m.multi_objective;
    if (!mo || !Array.isArray(mo.objectives) || mo.objectives.length < 2)
      return [{ metric: m.study.objective_metric, mode: m.study.objective_mode, tag: '', valueOf: (t) => t.value }];
    const byTrial = new Map((mo.points || []).map((p) => [p.trial, p.values]));
    return mo.objectives.map((o, k) => ({ metric: o.metric, mode: o.mode, tag: '@' + o.metric,
      valueOf: (t) => { const v = byTrial.get(t.number); return Array.isArray(v) ? v[k] : undefined; } }));
  }

  // ---- 6b. slice: the objective against each parameter that varies, one small chart each
  function slice(state, root, m, ctx) {
    const views = objectiveViews(m);
    const objs = views.map((v) => v.metric).join(', ');
    const c = card(root, 'slice', `${objs} against each parameter (slice)`,
      `One chart per parameter that varies${views.length > 1 ? ' and per objective' : ''}: the ${objs} of each COMPLETE ` +
      'trial against the value it had (log axis where a positive numeric parameter spans 10x or more; a categorical one ' +
      'by category, each labelled). A conditional parameter shows only the trials that had it. Colour: the trial (as in ' +
      'the legend above). Hover a point for its trial, parameters and value.');
    const names = m.varying_params || [];
    const byNumber = new Map(m.trials.map((t) => [t.number, t]));
    for (const view of views) {
      const obj = view.metric;
      const done = m.trials.filter((t) => t.state === 'COMPLETE' && finite(view.valueOf(t)));
      if (!names.length || !done.length) {
        emptyNote(c, 'slice' + view.tag, !names.length ? 'no parameter varies between trials' : `no COMPLETE trial has a ${obj} value yet`);
        continue;
      }
      if (views.length > 1) c.append(el('h3', { class: 'objective', text: `${obj} (${view.mode})` }));
      const grid = el('div', { class: 'grid3' });
      c.append(grid);
      for (const name of names) {
        const rows = done.filter((t) => t.params[name] !== undefined && t.params[name] !== null);
        const id = 'slice-' + name + view.tag;
        if (!rows.length) { emptyNote(grid, id, `no COMPLETE trial had ${name}`); continue; }
        const numeric = rows.every((t) => finite(t.params[name]));
        const opts = baseOptions(name, obj);
        let data;
        if (numeric) {
          const [lo, hi] = minMax(rows.map((t) => t.params[name]));
          if (lo > 0 && hi / lo >= 10) { opts.scales.x.type = 'logarithmic'; opts.scales.x.title.text = name + ' (log)'; }
          data = rows.map((t) => ({ x: t.params[name], y: view.valueOf(t), n: t.number }));
        } else {
          const key = (v) => (typeof v === 'string' ? v : JSON.stringify(v));
          const cats = [...new Set(rows.map((t) => key(t.params[name])))].sort();
          data = rows.map((t) => ({ x: cats.indexOf(key(t.params[name])), y: view.valueOf(t), n: t.number }));
          Object.assign(opts.scales.x, { min: -0.5, max: cats.length - 0.5,
            ticks: { stepSize: 1, autoSkip: false, callback: (v) => (Number.isInteger(v) && cats[v] !== undefined ? cats[v] : '') } });
          opts.scales.x.title.text = name + ' (categories)';
        }
        opts.interaction = { mode: 'nearest', intersect: true };
        opts.plugins.tooltip.callbacks = {
          label: (it) => `trial #${it.raw.n}: ${name}=${fmt(byNumber.get(it.raw.n).params[name])}, ${obj} ${fmt(it.parsed.y)}`,
          afterLabel: (it) => trialHover(byNumber.get(it.raw.n), m),
        };
        chart(state, grid, id, { type: 'scatter', options: opts, data: { datasets: [
          { label: name, data, pointRadius: 4, pointHoverRadius: 6,
            backgroundColor: rows.map((t) => (ctx.batch ? '#1c7ed6' : ctx.trialColor(t.number))), borderColor: 'rgba(0,0,0,0.4)' },
        ] } });
      }
    }
  }

  // ---- 7. parallel coordinates
  function parallel(state, root, m) {
    const obj = m.study.objective_metric;
    const views = objectiveViews(m);
    const c = card(root, 'parallel', `Parameters against the objective${views.length > 1 ? 's' : ''} (parallel coordinates)`,
      `One line per trial with a ${obj} value, across the parameters that vary` +
      (views.length > 1 ? ` and an axis per objective (${views.map((v) => v.metric).join(', ')})` : '') +
      '; each axis has its own range (log where a numeric parameter spans 10x or more); colour: ' +
      (views.length > 1 ? `the first objective, ${obj}` : 'the objective') + ', dark = better.');
    const names = m.varying_params || [];
    const rows = m.trials.filter((t) => finite(t.value));
    if (!names.length || !rows.length) return emptyNote(c, 'parallel', !names.length ? 'no parameter varies between trials' : `no trial has a ${obj} value yet`);
    const axes = names.map((n) => ({ name: n, key: (t) => t.params[n] })).concat(views.map((v) => ({ name: v.metric, key: v.valueOf })));
    for (const ax of axes) {
      const vals = rows.map(ax.key).filter((v) => v !== undefined && v !== null);
      const numeric = vals.length && vals.every(finite);
      if (numeric) {
        const [lo, hi] = minMax(vals);
        const log = lo > 0 && hi / lo >= 10;
        const f = log ? Math.log : (v) => v;
        ax.pos = (v) => (finite(v) ? (hi > lo ? (f(v) - f(lo)) / (f(hi) - f(lo)) : 0.5) : null);
        ax.ticks = hi > lo ? [{ pos: 0, label: fmt(lo, 3) }, { pos: 1, label: fmt(hi, 3) }] : [{ pos: 0.5, label: fmt(lo, 3) }];
      } else {
        const cats = [...new Set(vals.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))))].sort();
        ax.pos = (v) => { if (v === undefined || v === null) return null; const i = cats.indexOf(typeof v === 'string' ? v : JSON.stringify(v)); return cats.length > 1 ? i / (cats.length - 1) : 0.5; };
        ax.ticks = cats.length <= 12 ? cats.map((s, i) => ({ pos: cats.length > 1 ? i / (cats.length - 1) : 0.5, label: s.slice(0, 14) })) : [{ pos: 0, label: cats[0] }, { pos: 1, label: cats[cats.length - 1] }];
      }
    }
    const vs = rows.map((t) => t.value);
    const [vlo, vhi] = minMax(vs);
    const goodness = (v) => { const f = vhi > vlo ? (v - vlo) / (vhi - vlo) : 1; return m.study.objective_mode === 'max' ? f : 1 - f; };
    // Better trials drawn last, on top.
    const ordered = rows.slice().sort((a, b) => goodness(a.value) - goodness(b.value) || a.number - b.number);
    const datasets = ordered.map((t) => {
      const g = goodness(t.value);
      return { label: trialLabel(t), trial: t.number, data: axes.map((ax, i) => ({ x: i, y: ax.pos(ax.key(t)) })),
        borderColor: `hsla(${Math.round(50 + 190 * g)}, 75%, ${Math.round(62 - 30 * g)}%, ${rows.length > 100 ? 0.45 : 0.8})`,
        borderWidth: 1.2, pointRadius: 0, spanGaps: false, hidden: isHidden(state, t) };
    });
    const opts = baseOptions('', '');
    opts.layout = { padding: { left: 36, right: 36, top: 14, bottom: 4 } };
    opts.scales.x = { type: 'linear', min: 0, max: axes.length - 1, grid: { display: false },
      ticks: { stepSize: 1, autoSkip: false, callback: (v) => (Number.isInteger(v) && axes[v] ? axes[v].name : '') } };
    opts.scales.y = { type: 'linear', min: -0.02, max: 1.02, display: false };
    opts.plugins.dlsweepAxes = { axes };
    const byNumber = new Map(m.trials.map((t) => [t.number, t]));
    opts.plugins.tooltip.callbacks = { label: (it) => it.dataset.label, afterLabel: (it) => trialHover(byNumber.get(it.dataset.trial), m) };
    opts.interaction = { mode: 'nearest', intersect: false, axis: 'xy' };
    chart(state, c, 'parallel', { type: 'line', data: { datasets }, options: opts, plugins: [axesPlugin] }, true);
  }

  // ---- 8. Pareto front
  function pareto(state, root, m, ctx) {
    const c = card(root, 'pareto', 'Time to target vs compute (Pareto front)',
      'Compute = rank-seconds to target (ranks x time to target). The line joins the trials no other trial beats on both ' +
      '(the Pareto front): left of it nothing is faster for the same compute.');
    c.append(batchLegend(ctx));
    const reached = m.trials.filter((t) => finite(t.time_to_target_s) && finite(t.rank_seconds_to_target));
    if (!reached.length) return emptyNote(c, 'pareto', 'no trial has reached the target yet');
    const front = new Set(m.pareto);
    const others = reached.filter((t) => !front.has(t.number));
    const byNumber = new Map(m.trials.map((t) => [t.number, t]));
    const opts = baseOptions('rank-seconds to target', 'time to target (s)', 'logarithmic', 'logarithmic');
    opts.plugins.legend = { display: true, position: 'bottom', labels: { boxWidth: 12 } };
    opts.plugins.tooltip.callbacks = { label: (it) => `trial #${it.raw.n}: ${fmt(it.parsed.y)} s, ${fmt(it.parsed.x)} rank-s` };
    chart(state, c, 'pareto', { type: 'scatter', options: opts, data: { datasets: [
      { label: 'Pareto front', data: m.pareto.map((n) => byNumber.get(n)).map((t) => ({ x: t.rank_seconds_to_target, y: t.time_to_target_s, n: t.number })), showLine: true, borderColor: '#212529', backgroundColor: '#212529', pointRadius: 5 },
      { label: 'other trials (colour: batch size)', data: others.map((t) => ({ x: t.rank_seconds_to_target, y: t.time_to_target_s, n: t.number })), backgroundColor: others.map((t) => ctx.color(t.batch_size)), borderColor: 'transparent', pointRadius: 3 },
    ] } });
  }

  // ---- 9. optimization history and parameter importances
  function history(state, root, m) {
    const obj = m.study.objective_metric;
    const views = objectiveViews(m);
    const c = card(root, 'history', 'Optimization history and parameter importance',
      (views.length > 1
        ? `Each objective (${views.map((v) => v.metric).join(', ')}) of each COMPLETE trial by trial number, and the best so ` +
          `far of that objective alone (the front is the Pareto card's); last: importance for ${obj}, the first objective: `
        : `Left: ${obj} of each COMPLETE trial by trial number, and the best so far. Right: `) + (m.importance.method || '') + '.');
    const grid = el('div', { class: 'grid2' });
    c.append(grid);
    const draw = (id, metric, points) => {
      const opts = baseOptions('trial number', metric);
      opts.plugins.legend = { display: true, position: 'bottom', labels: { boxWidth: 12 } };
      chart(state, grid, id, { type: 'scatter', options: opts, data: { datasets: [
        { label: metric, data: points.map((h) => ({ x: h.number, y: h.value })), backgroundColor: '#1c7ed6', pointRadius: 3 },
        { label: 'best so far', data: points.map((h) => ({ x: h.number, y: h.best_so_far })), showLine: true, stepped: true, borderColor: '#c92a2a', backgroundColor: '#c92a2a', pointRadius: 0, borderWidth: 2 },
      ] } });
    };
    if (views.length > 1) {
      for (const view of views) {
        const done = m.trials.filter((t) => t.state === 'COMPLETE' && finite(view.valueOf(t))).sort((a, b) => a.number - b.number);
        if (!done.length) { emptyNote(grid, 'history' + view.tag, `no COMPLETE trial has a ${view.metric} value yet`); continue; }
        let best = null;
        draw('history' + view.tag, view.metric, done.map((t) => {
          const v = view.valueOf(t);
          best = best === null || (view.mode === 'max' ? v > best : v < best) ? v : best;
          return { number: t.number, value: v, best_so_far: best };
        }));
      }
    } else if (!m.history.length) emptyNote(grid, 'history', 'no COMPLETE trial with a value yet');
    else draw('history', obj, m.history);
    const imp = m.importance.values || [];
    if (!imp.length) return emptyNote(grid, 'importance', m.importance.note || 'no importance computed');
    // Parameters the data cannot rate (too few trials per group) have no bar; the note says why.
    if (m.importance.note) c.append(el('p', { class: 'note', 'data-note': 'importance', text: 'Importance ' + m.importance.note + '.' }));
    const opts = baseOptions('importance (eta squared, 0..1)', '', 'linear', 'category');
    opts.plugins.tooltip.callbacks = { label: (it) => { const v = imp[it.dataIndex] || {}; return `eta² ${fmt(v.importance, 3)}: ${v.trials} trials in ${v.groups} groups (no effect at all would give about ${fmt(v.chance, 2)})`; } };
    opts.indexAxis = 'y';
    opts.parsing = true;
    opts.scales.x.min = 0; opts.scales.x.max = 1;
    delete opts.normalized;
    chart(state, grid, 'importance', { type: 'bar', options: opts, data: { labels: imp.map((v) => v.param), datasets: [
      { label: 'importance', data: imp.map((v) => v.importance), backgroundColor: '#7048e8' },
    ] } });
  }

  // ---- 10. sortable trial table
  function table(state, root, m) {
    const c = card(root, 'trials', `Trials (${m.trials.length})`,
      'Click a column to sort (again to reverse). "show" hides or shows the trial on the line charts.');
    if (!m.trials.length) return emptyNote(c, 'trials', 'the study has no trial yet');
    const params = m.param_names;
    const cols = [
      { k: 'show', label: 'show' }, { k: 'number', label: '#' }, { k: 'state', label: 'state' },
      ...params.map((p) => ({ k: 'p:' + p, label: p })),
      { k: 'value', label: m.study.objective_metric }, { k: 'steps_to_target', label: 'steps to target' },
      { k: 'time_to_target_s', label: 'time to target (s)' }, { k: 'samples_per_s', label: 'samples/s' },
      { k: 'attempt', label: 'attempt' }, { k: 'message', label: 'failure / prune reason' },
    ];
    const get = (t, k) => (k.startsWith('p:') ? t.params[k.slice(2)] : t[k]);
    const sorted = m.trials.slice();
    const { key, dir } = state.sort;
    if (key !== 'show') {
      sorted.sort((a, b) => {
        const x = get(a, key), y = get(b, key);
        const nx = x === null || x === undefined, ny = y === null || y === undefined;
        if (nx || ny) return nx === ny ? a.number - b.number : nx ? 1 : -1;  // missing values last
        if (typeof x === 'number' && typeof y === 'number') return (x - y) * dir || a.number - b.number;
        return String(typeof x === 'object' ? JSON.stringify(x) : x).localeCompare(String(typeof y === 'object' ? JSON.stringify(y) : y)) * dir || a.number - b.number;
      });
    }
    const thead = el('tr');
    for (const col of cols) {
      const arrow = state.sort.key === col.k ? (state.sort.dir > 0 ? ' ▲' : ' ▼') : '';
      thead.append(el('th', { 'data-key': col.k, onclick: () => {
        state.sort = { key: col.k, dir: state.sort.key === col.k ? -state.sort.dir : 1 };
        render(state.model, state.root);
      } }, col.label + arrow));
    }
    const tbody = el('tbody');
    for (const t of sorted) {
      const tr = el('tr', { 'data-state': t.state });
      for (const col of cols) {
        if (col.k === 'show') {
          const box = el('input', { type: 'checkbox', 'data-trial-toggle': String(t.number) });
          box.checked = !isHidden(state, t);
          box.addEventListener('change', () => {
            if (box.checked) state.hiddenTrials.delete(t.number); else state.hiddenTrials.add(t.number);
            applyVisibility(state, m);
          });
          tr.append(el('td', {}, box));
        } else if (col.k === 'state') {
          tr.append(el('td', { style: `color:${STATE_COLOR[t.state] || '#212529'}`, text: t.state }));
        } else {
          const v = get(t, col.k);
          tr.append(el('td', { class: typeof v === 'number' ? 'num' : col.k === 'message' ? 'msg' : '', text: fmt(v), title: col.k === 'message' ? String(v || '') : '' }));
        }
      }
      tbody.append(tr);
    }
    const tbl = el('table', { class: 'trials', 'data-rows': String(sorted.length) }, el('thead', {}, thead), tbody);
    c.append(el('div', { class: 'tablewrap' }, tbl));
  }

  // ---- B_crit per value of a categorical parameter: report/grouped_fit.js, embedded with this file.
  function groupedFits(state, root, m) {
    if (typeof global.dlsweepGroupedFits === 'function')
      global.dlsweepGroupedFits(state, root, m, { el, card, chart, emptyNote, fmt, finite, baseOptions });
  }

  // ---- several objectives: the front and the hypervolume, report/pareto_front.js.
  function paretoFront(state, root, m) {
    if (typeof global.dlsweepParetoFront === 'function')
      global.dlsweepParetoFront(state, root, m, { el, card, chart, emptyNote, fmt, finite, baseOptions });
  }

  // ---- population-based training: the lineage and the winner's schedule, report/pbt_lineage.js.
  function pbtLineage(state, root, m) {
    if (typeof global.dlsweepPbtLineage === 'function')
      global.dlsweepPbtLineage(state, root, m, { el, card, chart, emptyNote, fmt, finite, baseOptions });
  }

  // ---- a branching study: the critical batch over training and its schedule, report/branch_cbs.js.
  function branchCbs(state, root, m) {
    if (typeof global.dlsweepBranchCbs === 'function')
      global.dlsweepBranchCbs(state, root, m, { el, card, emptyNote, fmt, finite });
  }

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
