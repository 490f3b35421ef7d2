// batch_model.js — the report's cards of the batch-size model (a study with a batch size):
// steps, samples and time to target against the batch size with the fitted curves, B_crit and
// its regimes (model: analysis), the gradient noise scale B_simple over training against that
// B_crit, and time to target against compute (the Pareto front of time and rank-seconds).
// Embedded after render.js (report/CMakeLists.txt), which calls dlsweepToTarget, dlsweepNoiseScale
// and dlsweepComputePareto(state, root, m, helpers, ctx) with its helpers, like every other card.
(function (global) {
  'use strict';

  // ---- 2 and 3. steps/samples/time to target vs batch size
  function analysisOf(m) { return m.analysis && m.analysis.available ? m.analysis : null; }

  // An undetermined B_crit (analysis: docs/math.md#when-b_crit-is-determined) shades no regime
  // and draws no B_crit line.
  const bCritKnown = (an, h) => !!an && an.determined !== false && h.finite(an.b_crit);

  function regimeBands(an, h) {
    const { finite } = h;
    if (!bCritKnown(an, h) || !Array.isArray(an.regimes)) return [];
    const colors = { perfect_scaling: 'rgba(43,138,62,0.08)', diminishing_returns: 'rgba(230,119,0,0.08)', maximal_parallelism: 'rgba(201,42,42,0.08)' };
    return an.regimes.filter((r) => finite(r.from) && finite(r.to)).map((r) => ({ from: r.from, to: r.to, color: colors[r.regime] || 'rgba(0,0,0,0.05)', label: r.label || r.regime }));
  }

  function toTarget(state, root, m, h, ctx) {
    const { el, card, chart, emptyNote, fmt, finite, baseOptions, marksPlugin } = h;
    const an = analysisOf(m);
    const target = m.study.objective_target;
    const fitNote = an ? `Curves: the fitted batch-size model (${an.method || 'least squares in log space'}); ` +
      `B_crit = ${fmt(an.b_crit, 3)}${an.b_crit_interval ? ` (${Math.round(100 * (an.level || 0.9))}% interval ${fmt(an.b_crit_interval[0], 3)} to ${fmt(an.b_crit_interval[1], 3)})` : ''}` +
      `${an.at_edge ? ' (at the edge of the searched range: a bound only)' : ''}; S_min = ${fmt(an.s_min, 3)} steps, E_min = ${fmt(an.e_min, 3)} samples; ` +
      (bCritKnown(an, h) ? 'shaded: the regimes (perfect scaling, diminishing returns, maximal data parallelism).'
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
      opts.plugins.dlsweepMarks = { bands: regimeBands(an, h), vlines: bCritKnown(an, h) ? [{ x: an.b_crit, label: 'B_crit ' + fmt(an.b_crit, 3), color: '#c2255c' }] : [] };
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
    opts.plugins.dlsweepMarks = { bands: regimeBands(an, h) };
    chart(state, c3, 'time-to-target', { type: 'scatter', options: opts, plugins: [marksPlugin], data: { datasets: [
      { label: grouped ? 'best per batch (seed-group mean, as above)' : 'best per batch', data: best, showLine: true, borderColor: '#212529', backgroundColor: '#212529', pointRadius: 5, borderWidth: 1 },
      { label: 'trials', data: reached.map((t) => ({ x: t.batch_size, y: t.time_to_target_s })), pointRadius: 2.5, backgroundColor: reached.map((t) => ctx.color(t.batch_size)), borderColor: 'transparent' },
    ] } });
  }

  // ---- 4. gradient noise scale over training
  function noiseScale(state, root, m, h, ctx) {
    const { card, chart, emptyNote, fmt, finite, baseOptions, marksPlugin, DASH, trialLabel, isHidden, batchLegend } = h;
    const an = analysisOf(m);
    const ns = m.noise_scale;
    // No trial reported the metric: the chart is hidden, and the note says how a program reports it.
    if (ns && ns.reported === false) {
      const h = card(root, 'noise-scale', 'Gradient noise scale B_simple: not measured');
      return emptyNote(h, 'noise-scale', ns.note || 'no trial reported grad_noise_scale');
    }
    const c = card(root, 'noise-scale', 'Gradient noise scale B_simple over training',
      'B_simple = tr(Σ)/|G|² (McCandlish et al. 2018) as the trial reported it (metric grad_noise_scale), per trial, against samples seen; ' +
      (bCritKnown(an, h) ? `dashed: the fitted B_crit = ${fmt(an.b_crit, 3)}.` : 'no determined B_crit to compare with (see above).') +
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
    opts.plugins.dlsweepMarks = { hlines: bCritKnown(an, h) ? [{ y: an.b_crit, label: 'fitted B_crit', color: '#c2255c' }] : [] };
    chart(state, c, 'noise-scale', { type: 'line', data: { datasets }, options: opts, plugins: [marksPlugin] });
  }

  // ---- 8. time to target vs compute (Pareto front)
  function pareto(state, root, m, h, ctx) {
    const { card, chart, emptyNote, fmt, finite, baseOptions, batchLegend } = h;
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

  global.dlsweepToTarget = toTarget;
  global.dlsweepNoiseScale = noiseScale;
  global.dlsweepComputePareto = pareto;
})(typeof window !== 'undefined' ? window : this);
