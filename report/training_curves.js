// training_curves.js — the report's cards of curves over training: the objective of every trial
// against step, samples and wall time (convergence; "intermediate values" in a study without a
// batch size, with one legend entry per trial), the batch an adaptive trial chose and the
// B_simple it measured at each decision (batch over training), and the learning rate the best
// trials used. Embedded after render.js (report/CMakeLists.txt), which calls
// dlsweepConvergence, dlsweepBatchOverTraining and dlsweepLearningRate(state, root, m, helpers, ctx)
// with its helpers (report/render.js: `helpers`), so they draw like every other card.
(function (global) {
  'use strict';

  // FAILED trials whose objective or loss became NaN/inf (their message says "diverged").
  function divergedTrials(m) {
    return m.trials.filter((t) => t.state === 'FAILED' && /^diverged/.test(t.message || ''));
  }

  // ---- 1. convergence: objective vs step, samples, wall time
  function convergence(state, root, m, h, ctx) {
    const { el, card, chart, emptyNote, fmt, finite, minMax, baseOptions, marksPlugin, STATES, DASH, STATE_COLOR,
      trialLabel, trialHover, isHidden, batchLegend, applyVisibility } = h;
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
    c.append(ctl, ctx.batch ? batchLegend(ctx) : trialLegend(state, m, ctx, h));
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
  function trialLegend(state, m, ctx, h) {
    const { el, trialHover, isHidden, applyVisibility } = h;
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

  // ---- 4b. batch over training: the batch an adaptive trial (batch_ramp adaptive) chose at
  // each decision, and the B_simple it measured there, against the step (model: batch_over_training).
  function batchOverTraining(state, root, m, h) {
    const { el, card, chart, emptyNote, fmt, finite, baseOptions, trialColor, trialLabel, isHidden } = h;
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

  // ---- 6. LR actually used vs step, best few trials
  function learningRate(state, root, m, h) {
    const { card, chart, emptyNote, finite, baseOptions, trialLabel } = h;
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

  global.dlsweepConvergence = convergence;
  global.dlsweepBatchOverTraining = batchOverTraining;
  global.dlsweepLearningRate = learningRate;
})(typeof window !== 'undefined' ? window : this);
