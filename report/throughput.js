// throughput.js — the report's throughput card: the last reported samples/s of each COMPLETE
// trial against its batch size (one colour per rank count), strong scaling over ranks with its
// efficiency (the model's "scaling"), and under them the efficiency tables of analysis/
// ("scaling_tables": strong and weak, over ranks and over threads). Embedded after render.js
// (report/CMakeLists.txt), which calls dlsweepThroughput(state, root, m, helpers) with its own
// helpers (el, card, chart, emptyNote, fmt, finite, baseOptions), so it draws like every other card.
(function (global) {
  'use strict';

  function throughput(state, root, m, h) {
    const { el, card, chart, emptyNote, fmt, finite, baseOptions } = h;
    const c = card(root, 'throughput', 'Throughput (samples/s) vs batch size and vs ranks',
      'Left: the last reported samples/s of each COMPLETE trial, one colour per rank count. Right: strong scaling at a fixed ' +
      'global batch and threads per rank (mean over trials of a shape); scaling efficiency = T(N) / (N/N0 · T(N0)), ' +
      'N0 the smallest rank count measured, in the tooltip and the dashed lines (right axis).');
    const done = m.trials.filter((t) => t.state === 'COMPLETE' && finite(t.samples_per_s) && finite(t.batch_size));
    if (!done.length) return emptyNote(c, 'throughput-batch', 'no COMPLETE trial reported the metric samples_per_s (training samples per second; a program reports it with its eval records)');
    const grid = el('div', { class: 'grid2' });
    c.append(grid);
    const ranks = [...new Set(done.map((t) => t.ranks))].sort((a, b) => a - b);
    const palette = ['#1c7ed6', '#2b8a3e', '#e67700', '#c92a2a', '#7048e8', '#0c8599', '#5c940d', '#d6336c'];
    const opts = baseOptions('batch size', 'samples/s', 'logarithmic', 'linear');
    opts.plugins.legend = { display: true, position: 'bottom', labels: { boxWidth: 12 } };
    chart(state, grid, 'throughput-batch', { type: 'scatter', options: opts, data: { datasets: ranks.map((r, i) => ({
      label: `${r} rank${r === 1 ? '' : 's'}`, data: done.filter((t) => t.ranks === r).map((t) => ({ x: t.batch_size, y: t.samples_per_s })),
      backgroundColor: palette[i % palette.length], borderColor: palette[i % palette.length], pointRadius: 3 })) } });
    const series = (m.scaling || []).filter((s) => s.points.length > 1);
    if (!series.length) {
      emptyNote(grid, 'throughput-ranks', 'every batch size ran on one rank count only: no scaling to show (add ranks: [1, 2, ...] to the space)');
      scalingTables(c, m, h);  // threads may still have been varied
      return;
    }
    const datasets = [];
    series.forEach((s, i) => {
      const col = palette[i % palette.length];
      const name = `B=${fmt(s.batch_size)}${s.threads !== 1 ? ', ' + fmt(s.threads) + ' threads' : ''}`;
      datasets.push({ label: name + ' samples/s', data: s.points.map((p) => ({ x: p.ranks, y: p.samples_per_s, eff: p.efficiency })), borderColor: col, backgroundColor: col, showLine: true, yAxisID: 'y' });
      datasets.push({ label: name + ' efficiency', data: s.points.map((p) => ({ x: p.ranks, y: p.efficiency })), borderColor: col, backgroundColor: col, showLine: true, borderDash: [5, 4], pointRadius: 2, yAxisID: 'y2' });
    });
    const o2 = baseOptions('ranks', 'samples/s', 'logarithmic', 'linear');
    o2.scales.y2 = { type: 'linear', position: 'right', min: 0, suggestedMax: 1.1, title: { display: true, text: 'scaling efficiency' }, grid: { drawOnChartArea: false } };
    o2.plugins.legend = { display: true, position: 'bottom', labels: { boxWidth: 12, filter: (item) => !item.text.endsWith(' efficiency') } };
    o2.plugins.tooltip.callbacks = { label: (it) => `${it.dataset.label}: ${fmt(it.parsed.y)}${finite(it.raw.eff) ? ' (efficiency ' + fmt(it.raw.eff, 3) + ')' : ''}` };
    chart(state, grid, 'throughput-ranks', { type: 'scatter', data: { datasets }, options: o2 });
    scalingTables(c, m, h);
  }

  // The efficiency tables of analysis/ (strong: fixed global batch; weak: fixed per-worker
  // batch), over ranks and over threads, for the studies that varied them.
  function scalingTables(c, m, h) {
    const { el, fmt } = h;
    for (const t of m.scaling_tables || []) {
      for (const [kind, rows] of [['strong', t.strong], ['weak', t.weak]]) {
        if (!rows || !rows.length) continue;
        c.append(el('p', { class: 'note', text: `${kind === 'strong' ? 'Strong' : 'Weak'} scaling over ${t.resource}` +
          (kind === 'strong' ? ' (same global batch): ' : ' (same batch per worker): ') +
          'speedup = samples/s over that of the fewest ' + t.resource + ' of the series, efficiency = speedup / resource ratio.' }));
        const table = el('table', { class: 'scaling', 'data-scaling': `${t.resource}-${kind}` });
        const head = el('tr');
        for (const h of ['configuration', 'batch', 'per worker', t.resource, 'samples/s', 'speedup', 'efficiency']) head.append(el('th', { text: h }));
        table.append(head);
        const shown = rows.slice(0, 24);
        for (const r of shown) {
          const tr = el('tr');
          let config = r.config || '-';
          try { const o = JSON.parse(config); if (o && typeof o === 'object') config = Object.entries(o).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ') || '-'; } catch (e) { /* plain text */ }
          for (const v of [config, fmt(r.batch), fmt(r.per_worker_batch), fmt(r.resources), fmt(r.samples_per_s.mean, 4),
            fmt(r.speedup, 3) + 'x', fmt(100 * r.efficiency, 3) + '%']) tr.append(el('td', { text: v }));
          table.append(tr);
        }
        c.append(table);
        if (rows.length > shown.length)
          c.append(el('p', { class: 'note', text: `... and ${rows.length - shown.length} more rows (\`dlsweep best STUDY --explain --format json\` lists them all).` }));
      }
    }
  }

  global.dlsweepThroughput = throughput;
})(typeof window !== 'undefined' ? window : this);
