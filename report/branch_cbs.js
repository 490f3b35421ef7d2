// branch_cbs.js — the report's card for a branching study (the model's "branch":
// report/branch_cbs_model.hpp): the critical batch measured by branching from the trunk's
// checkpoints (common/branch_cbs.hpp), drawn as an SVG chart — the study's axis (samples or
// epoch) against the batch on a log2 axis. Each point is its interval [lo, hi] as an error bar
// with a marker at lo (the largest batch surely within the tolerance of the smallest): filled
// when determined (lo == hi), hollow and labelled when the noise leaves it undetermined, with an
// upward arrow when capped (hi is the largest batch tried: the critical batch is at least hi).
// Over it, the trunk's B_simple where it was measured (a line, its own label) and the schedule
// that follows the curve (a step line: what `dlsweep best --write-schedule` writes). Under it, a
// table (point, critical batch or interval, determined, seeds, schedule batch, why): the chart's
// text alternative. No chart library: the chart is a handful of SVG elements. Embedded after
// render.js (report/CMakeLists.txt), which calls dlsweepBranchCbs(state, root, m, helpers).
(function (global) {
  'use strict';

  const CBS = '#1c7ed6', NOISE = '#e8590c', SCHEDULE = '#2b8a3e', AXIS = '#495057', GRID = '#e9ecef';
  const W = 900, H = 360, PAD = { left: 64, right: 128, top: 18, bottom: 46 };
  const HALO = { stroke: '#fff', 'stroke-width': 3, 'paint-order': 'stroke' };  // a label stays readable over lines

  // The SVG namespace, taken from the HTML parser (the page holds no URL, not even this one).
  let svgNs = null;
  function ns() {
    if (!svgNs) {
      const d = document.createElement('div');
      d.innerHTML = '<svg></svg>';
      svgNs = d.firstChild.namespaceURI;
    }
    return svgNs;
  }

  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(ns(), tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v;
      else e.setAttribute(k, String(v));
    }
    for (const c of children) if (c != null) e.append(c);
    return e;
  }

  const axisName = (b) => (b.axis === 'samples' ? 'samples seen' : b.axis);

  // "128", "[64, 256]", "≥ 512", "[64, ≥ 512]" (capped) or "" (unmeasured): the critical batch as the table says it.
  function batchText(a, h) {
    if (!h.finite(a.lo)) return '';
    if (a.determined) return a.capped ? `≥ ${h.fmt(a.hi)}` : h.fmt(a.lo);
    return `[${h.fmt(a.lo)}, ${a.capped ? '≥ ' : ''}${h.fmt(a.hi)}]`;
  }

  function status(a, h) {
    if (!h.finite(a.lo)) return 'unmeasured';
    if (!a.determined) return 'undetermined';
    return a.capped ? 'capped' : 'determined';
  }

  // A tick step of 1, 2, 2.5 or 5 times a power of ten, at least `raw`.
  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    const p = 10 ** Math.floor(Math.log10(raw));
    return p * ([1, 2, 2.5, 5, 10].find((f) => f * p >= raw * (1 - 1e-9)) || 10);
  }

  // A tick label: samples in thousands or millions ("250k", "1.5M"), other numbers as they are.
  function compact(v, h) {
    const a = Math.abs(v);
    if (a >= 1e6) return `${h.fmt(v / 1e6, 3)}M`;
    if (a >= 1e4) return `${h.fmt(v / 1e3, 3)}k`;
    return h.fmt(Number(v.toPrecision(6)), 4);
  }

  // The y range (log2): the batches tried, the intervals and the schedule; B_simple widens it by at
  // most 4 doublings each way (the rest is clipped, and said).
  function yRange(b, measured, noise, h) {
    const ys = [...b.batches, ...b.schedule.map((s) => s.batch)];
    for (const a of measured) ys.push(a.lo, a.hi);
    const pos = ys.filter((y) => h.finite(y) && y > 0);
    let lo = Math.floor(Math.log2(Math.min(...pos))) - 1, hi = Math.ceil(Math.log2(Math.max(...pos))) + 1;
    const ln = noise.map((p) => Math.log2(p.b_simple));
    if (ln.length) {
      lo = Math.max(Math.min(lo, Math.floor(Math.min(...ln))), lo - 4);
      hi = Math.min(Math.max(hi, Math.ceil(Math.max(...ln))), hi + 4);
    }
    return [lo, hi];
  }

  function draw(c, b, h) {
    const measured = b.answers.filter((a) => h.finite(a.lo) && h.finite(a.hi) && h.finite(a.at));
    const noise = (b.noise || []).filter((p) => h.finite(p.at) && h.finite(p.b_simple) && p.b_simple > 0);
    if (!measured.length)
      return h.emptyNote(c, 'critical-batch-branch', b.branches.length
        ? `no point has two finished branches of its smallest batch (${h.fmt(b.trunk_batch)}) yet: nothing to compare against`
        : 'no branch has been created yet');
    const [y0, y1] = yRange(b, measured, noise, h);
    const xs = [0, ...b.points, ...measured.map((a) => a.at + (h.finite(b.delta) ? b.delta : 0)), ...noise.map((p) => p.at)]
      .filter((x) => h.finite(x));
    const x1 = Math.max(...xs) * 1.04 || 1;
    const pw = W - PAD.left - PAD.right, ph = H - PAD.top - PAD.bottom;
    const X = (x) => PAD.left + (x / x1) * pw;
    const Y = (batch) => PAD.top + (1 - (Math.log2(batch) - y0) / (y1 - y0)) * ph;
    const right = PAD.left + pw;

    const summary = measured.map((a) => `at ${axisName(b)} ${h.fmt(a.at)}: ${batchText(a, h)} (${status(a, h)})`).join('; ');
    const g = svg('svg', {
      viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-labelledby': 'cbs-branch-title cbs-branch-desc',
      'data-chart': 'critical-batch-branch', preserveAspectRatio: 'xMidYMid meet', style: 'max-height:420px;display:block',
      'font-family': 'system-ui, sans-serif', 'font-size': 11,
    },
    svg('title', { id: 'cbs-branch-title', text: `Critical batch over training, by branching (${b.metric})` }),
    svg('desc', { id: 'cbs-branch-desc', text: `Critical batch against ${axisName(b)}, log2 batch axis: ${summary}. ` +
      `Schedule: batch_ramp ${b.ramp}.` + (noise.length ? ` B_simple of the trunk at ${noise.length} reports.` : '') }),
    svg('defs', {}, svg('clipPath', { id: 'cbs-branch-clip' },
      svg('rect', { x: PAD.left, y: PAD.top, width: pw, height: ph }))));

    // Axes and grid: a line per power of two (labelled every step, or every other when crowded).
    const axes = svg('g', { 'data-part': 'axes', stroke: AXIS, fill: AXIS });
    const every = y1 - y0 > 14 ? 2 : 1;
    for (let e = Math.ceil(y0); e <= y1; ++e) {
      const y = Y(2 ** e);
      axes.append(svg('line', { x1: PAD.left, x2: right, y1: y, y2: y, stroke: GRID }));
      if ((e - Math.ceil(y0)) % every === 0)
        axes.append(svg('text', { x: PAD.left - 6, y: y + 4, 'text-anchor': 'end', stroke: 'none', text: h.fmt(2 ** e) }));
    }
    const step = niceStep(x1 / 6);
    for (let i = 0; i * step <= x1 * (1 + 1e-9); ++i) {
      const x = X(i * step);
      axes.append(svg('line', { x1: x, x2: x, y1: PAD.top + ph, y2: PAD.top + ph + 4 }),
        svg('text', { x, y: PAD.top + ph + 16, 'text-anchor': 'middle', stroke: 'none', text: compact(i * step, h) }));
    }
    axes.append(svg('line', { x1: PAD.left, x2: right, y1: PAD.top + ph, y2: PAD.top + ph }),
      svg('line', { x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: PAD.top + ph }),
      svg('text', { x: PAD.left + pw / 2, y: H - 6, 'text-anchor': 'middle', stroke: 'none', 'font-size': 12, text: axisName(b) }),
      svg('text', { x: 14, y: PAD.top + ph / 2, 'text-anchor': 'middle', stroke: 'none', 'font-size': 12,
        transform: `rotate(-90 14 ${PAD.top + ph / 2})`, text: 'batch size (log2)' }));
    g.append(axes);

    const plot = svg('g', { 'clip-path': 'url(#cbs-branch-clip)' });
    g.append(plot);
    // The schedule: a step line from 0 to the right edge, held until the next stage.
    const stages = (b.schedule || []).filter((s) => h.finite(s.at) && h.finite(s.batch) && s.batch > 0);
    if (stages.length) {
      let d = '';
      stages.forEach((s, i) => {
        const xa = X(s.at), xb = i + 1 < stages.length ? X(stages[i + 1].at) : right;
        d += `${i ? 'L' : 'M'}${xa},${Y(s.batch)} L${xb},${Y(s.batch)} `;
      });
      plot.append(svg('path', { d, fill: 'none', stroke: SCHEDULE, 'stroke-width': 2, 'stroke-dasharray': '6 3',
        'data-mark': 'schedule', 'data-stages': stages.length },
      svg('title', { text: `schedule: batch_ramp ${b.ramp}` })));
      const last = stages[stages.length - 1];
      g.append(svg('text', { x: right + 4, y: Y(last.batch) + 4, fill: SCHEDULE, text: `schedule (${h.fmt(last.batch)})` }));
    }
    // The trunk's B_simple where it was measured: a line through its reports, dots on them.
    if (noise.length) {
      const pts = noise.map((p) => `${X(p.at)},${Y(p.b_simple)}`).join(' ');
      plot.append(svg('polyline', { points: pts, fill: 'none', stroke: NOISE, 'stroke-width': 1.5, 'data-mark': 'noise',
        'data-points': noise.length }));
      for (const p of noise)
        plot.append(svg('circle', { cx: X(p.at), cy: Y(p.b_simple), r: 2.5, fill: NOISE, 'data-mark': 'noise-point' },
          svg('title', { text: `B_simple ${h.fmt(p.b_simple)} at ${axisName(b)} ${h.fmt(p.at)} (trunk trial ${p.trial})` })));
      const lastN = noise[noise.length - 1];
      const ly = Math.min(Math.max(Y(lastN.b_simple), PAD.top + 10), PAD.top + ph);
      g.append(svg('text', { x: right + 4, y: ly + 4, fill: NOISE, text: 'B_simple (trunk)' }));
    }
    // The points: an error bar [lo, hi], a marker at lo, a label when undetermined or capped.
    for (const a of measured) {
      const x = X(a.at), ylo = Y(a.lo), yhi = Y(a.hi);
      const open = !a.determined;
      const mark = svg('g', { 'data-mark': 'point', 'data-point': a.point, 'data-status': status(a, h) },
        svg('title', { text: `point ${a.point} at ${axisName(b)} ${h.fmt(a.at)}: critical batch ${batchText(a, h)}` +
          ` (${status(a, h)}, ${a.min_seeds} seeds); ${a.why}` }),
        svg('line', { x1: x, x2: x, y1: ylo, y2: yhi, stroke: CBS, 'stroke-width': 1.5 }),
        svg('line', { x1: x - 5, x2: x + 5, y1: ylo, y2: ylo, stroke: CBS, 'stroke-width': 1.5 }),
        svg('line', { x1: x - 5, x2: x + 5, y1: yhi, y2: yhi, stroke: CBS, 'stroke-width': 1.5 }),
        svg('circle', { cx: x, cy: ylo, r: 5, fill: open ? '#fff' : CBS, stroke: CBS, 'stroke-width': 2,
          'data-mark': open ? 'hollow' : 'filled' }));
      if (a.capped)
        mark.append(svg('path', { d: `M${x},${yhi} L${x},${yhi - 22} M${x - 5},${yhi - 15} L${x},${yhi - 22} L${x + 5},${yhi - 15}`,
          fill: 'none', stroke: CBS, 'stroke-width': 1.5, 'data-mark': 'capped' }));
      if (open || a.capped)
        mark.append(svg('text', { x: x + 8, y: (a.capped ? yhi - 12 : ylo) + 4, fill: CBS, ...HALO,
          text: open ? `undetermined${a.capped ? ', ≥ ' + h.fmt(a.hi) + '?' : ''}` : `≥ ${h.fmt(a.hi)}` }));
      plot.append(mark);
    }
    g.setAttribute('data-points', String(measured.length));
    g.setAttribute('data-noise', String(noise.length));
    g.setAttribute('data-steps', String(stages.length));
    c.append(h.el('div', { class: 'plot-svg' }, g));
    const clipped = noise.filter((p) => Math.log2(p.b_simple) < y0 || Math.log2(p.b_simple) > y1).length;
    if (clipped)
      c.append(h.el('p', { class: 'note', 'data-note': 'branch-noise-clipped',
        text: `${clipped} of the trunk's ${noise.length} B_simple reports lie outside the batch range drawn (more than 16x beyond it) and run off its edge.` }));
    return g;
  }

  function legend(b, h) {
    const l = h.el('div', { class: 'legend' });
    const item = (color, text, hollow) => l.append(
      h.el('span', { class: 'swatch', style: hollow ? `background:#fff;border:2px solid ${color};box-sizing:border-box` : `background:${color}` }),
      h.el('span', { text: text + ' ' }));
    item(CBS, 'critical batch, determined (bar: interval)');
    item(CBS, 'undetermined (hollow)', true);
    item(SCHEDULE, 'schedule');
    if ((b.noise || []).length) item(NOISE, 'B_simple of the trunk');
    return l;
  }

  function table(b, h) {
    const head = h.el('tr', {}, ...['point', axisName(b), 'critical batch', 'determined', 'seeds', 'schedule batch', 'why']
      .map((t) => h.el('th', { text: t })));
    const body = h.el('tbody');
    for (const a of b.answers)
      body.append(h.el('tr', { 'data-point': String(a.point), 'data-status': status(a, h) },
        h.el('td', { class: 'num', text: String(a.point) }),
        h.el('td', { class: 'num', text: h.fmt(a.at) }),
        h.el('td', { class: 'num', text: batchText(a, h) || 'not measured' }),
        h.el('td', { text: !h.finite(a.lo) ? 'no' : a.determined ? (a.capped ? 'yes (capped)' : 'yes') : 'no' }),
        h.el('td', { class: 'num', text: String(a.min_seeds) }),
        h.el('td', { class: 'num', text: h.fmt(a.schedule_batch) }),
        h.el('td', { style: 'white-space:normal;min-width:40ch', text: a.why || '' })));
    return h.el('div', { class: 'tablewrap' },
      h.el('table', { class: 'scaling branch-cbs', 'data-rows': String(b.answers.length) }, h.el('thead', {}, head), body));
  }

  function branchCbs(state, root, m, h) {
    const b = m.branch;
    if (!b || !Array.isArray(b.answers)) return;
    const done = b.branches.filter((r) => h.finite(r.value)).length;
    const c = h.card(root, 'critical-batch-branch', 'Critical batch over training (branching)',
      `A trunk trains at batch ${h.fmt(b.trunk_batch)}; at ${b.points.length} points on the ${b.axis} axis, branches start ` +
      `from its checkpoint at batches ${b.batches.map((x) => h.fmt(x)).join(', ')} (LR x${b.lr_factors.map((f) => h.fmt(f)).join(', x')}, ` +
      `${b.seeds} seeds, up to ${b.max_seeds} where the noise leaves a point undetermined` +
      (b.scan === 'upward' ? '; each point\'s batches in waves from the smallest up, stopping at the first batch surely ' +
        'outside the tolerance, since nothing above it changes the answer' : '') +
      `) and train ${h.fmt(b.delta)} ${b.axis} ` +
      `further; ${done} of ${b.branches.length} branches reached their end. At each point the critical batch is the largest ` +
      `batch whose ${b.metric} after that stretch is within ${h.fmt(100 * b.tolerance)}% of the smallest batch's: the bar is ` +
      'its interval [lo, hi] (lo: within beyond the noise, 2 standard errors; hi: possibly within), the dot is at lo, filled ' +
      'when lo = hi, hollow when the noise leaves it undetermined (more seeds decide it); an arrow up: hi is the largest ' +
      'batch tried, so the critical batch may be larger. Dashed green: the schedule that follows the curve (each stage ' +
      `at most the next point's lo), batch_ramp ${b.ramp}, which \`dlsweep best --write-schedule\` writes as a study` +
      ((b.noise || []).length ? '; orange: the trunk\'s gradient noise scale B_simple, for comparison (not what decides).'
        : '. The trunk reported no grad_noise_scale, so B_simple is not drawn.'));
    c.append(legend(b, h));
    draw(c, b, h);
    c.append(table(b, h));
  }

  global.dlsweepBranchCbs = branchCbs;
})(typeof window !== 'undefined' ? window : this);
