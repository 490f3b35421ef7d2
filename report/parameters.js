// parameters.js — the report's cards of the parameters against the objective(s): one slice chart
// per parameter that varies (and per objective), the parallel coordinates of every trial, and the
// optimization history with the parameters' importance. Embedded after render.js
// (report/CMakeLists.txt), which calls dlsweepSlice, dlsweepParallel and dlsweepHistory(state, root,
// m, helpers, ctx) with its helpers, so they draw like every other card.
(function (global) {
  'use strict';

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
  function slice(state, root, m, h, ctx) {
    const { el, card, chart, emptyNote, fmt, finite, minMax, baseOptions, trialHover } = h;
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

  // ---- 7. parallel coordinates
  function parallel(state, root, m, h) {
    const { card, chart, emptyNote, fmt, finite, minMax, baseOptions, trialLabel, trialHover, isHidden } = h;
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

  // ---- 9. optimization history and parameter importances
  function history(state, root, m, h) {
    const { el, card, chart, emptyNote, fmt, finite, baseOptions } = h;
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

  global.dlsweepSlice = slice;
  global.dlsweepParallel = parallel;
  global.dlsweepHistory = history;
})(typeof window !== 'undefined' ? window : this);
