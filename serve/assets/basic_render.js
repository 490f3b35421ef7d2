// basic_render.js — the live view's own renderer, used until the report's render.js is
// built in: render(data, root) draws the study header, a convergence chart (objective vs
// step, one line per trial, as SVG) and the trial table. Idempotent: it replaces root's
// content. Rows carry data-trial and data-state.
function render(data, root) {
  'use strict';
  var SVG = 'http://www.w3.org/2000/svg';
  var s = data.study, trials = data.trials || [];
  root.textContent = '';
  var h1 = document.createElement('h1');
  h1.textContent = s.name + ' — ' + s.state;
  root.appendChild(h1);
  var p = document.createElement('p');
  p.textContent = 'objective: ' + s.objective.metric + ' (' + s.objective.mode + ')' +
      (s.objective.target === null ? '' : ', target ' + s.objective.target) + ' · ' + trials.length + ' trials';
  root.appendChild(p);

  // Convergence: objective vs step.
  var W = 640, H = 280, M = 40, pts = [];
  trials.forEach(function (t) { (t.curve || []).forEach(function (c) { if (c[3] !== null) pts.push(c); }); });
  var svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('width', W); svg.setAttribute('height', H); svg.setAttribute('id', 'convergence');
  if (pts.length) {
    var x0 = Math.min.apply(null, pts.map(function (c) { return c[0]; }));
    var x1 = Math.max.apply(null, pts.map(function (c) { return c[0]; }));
    var y0 = Math.min.apply(null, pts.map(function (c) { return c[3]; }));
    var y1 = Math.max.apply(null, pts.map(function (c) { return c[3]; }));
    var sx = function (x) { return M + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (W - 2 * M); };
    var sy = function (y) { return H - M - (y1 > y0 ? (y - y0) / (y1 - y0) : 0.5) * (H - 2 * M); };
    trials.forEach(function (t, i) {
      var c = (t.curve || []).filter(function (q) { return q[3] !== null; });
      if (!c.length) return;
      var line = document.createElementNS(SVG, 'polyline');
      line.setAttribute('points', c.map(function (q) { return sx(q[0]) + ',' + sy(q[3]); }).join(' '));
      line.setAttribute('fill', 'none');
      line.setAttribute('stroke', 'hsl(' + (i * 47 % 360) + ',65%,45%)');
      line.setAttribute('data-trial', t.number);
      if (t.state === 'FAILED' || t.state === 'PRUNED') line.setAttribute('stroke-dasharray', '4 3');
      svg.appendChild(line);
    });
    var label = function (x, y, text) {
      var e = document.createElementNS(SVG, 'text'); e.setAttribute('x', x); e.setAttribute('y', y);
      e.setAttribute('font-size', '11'); e.textContent = text; svg.appendChild(e);
    };
    label(M, H - 10, 'step ' + x0); label(W - M - 60, H - 10, 'step ' + x1);
    label(2, M, String(+y1.toPrecision(4))); label(2, H - M, String(+y0.toPrecision(4)));
  }
  root.appendChild(svg);

  var table = document.createElement('table');
  table.id = 'trials';
  var head = table.insertRow();
  ['#', 'state', 'params', 'value', 'best', 'steps to target', 'time to target (s)', 'message'].forEach(function (x) {
    var th = document.createElement('th'); th.textContent = x; head.appendChild(th);
  });
  var num = function (v) { return v === null || v === undefined ? '' : String(+(+v).toPrecision(5)); };
  trials.forEach(function (t) {
    var tr = table.insertRow();
    tr.dataset.trial = t.number;
    tr.dataset.state = t.state;
    [[String(t.number), 'num'], [t.state, 'state-' + t.state], [JSON.stringify(t.params), ''],
     [num(t.value), 'num'], [num(t.best_value), 'num'], [num(t.steps_to_target), 'num'],
     [num(t.time_to_target_s), 'num'], [t.message || '', '']].forEach(function (c) {
      var td = tr.insertCell(); td.textContent = c[0]; if (c[1]) td.className = c[1];
    });
  });
  root.appendChild(table);
}
