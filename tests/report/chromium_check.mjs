// chromium_check.mjs — loads an HTML report in headless Chromium over the DevTools protocol
// and prints one JSON object: the console errors, exceptions and log errors (CSP refusals,
// failed loads) the page produced, every network request it tried, and for each chart the
// number of points of each dataset (read through Chart.js's own API: Chart.getChart).
// It also saves a full-page PNG screenshot.
//
//   node chromium_check.mjs CHROMIUM REPORT.html SCREENSHOT.png [TIMEOUT_S]
//
// Chromium is driven by tests/support/chromium_driver.mjs (no npm package).
// Exit 0 with the JSON on stdout; exit 1 with a message on stderr if Chromium could not be
// driven (a test failure, not a skip).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { runInChromium, sleep } from '../support/chromium_driver.mjs';

const [chromiumBin, reportPath, shotPath, timeoutArg] = process.argv.slice(2);
if (!chromiumBin || !reportPath || !shotPath) {
  process.stderr.write('usage: node chromium_check.mjs CHROMIUM REPORT.html SCREENSHOT.png [TIMEOUT_S]\n');
  process.exit(2);
}
const timeoutMs = 1000 * Number(timeoutArg || 240);  // bounds a hang only; the machine may be loaded

runInChromium('chromium_check', chromiumBin, { args: ['--hide-scrollbars'], timeoutMs }, async (page) => {
  const s = page.send, errors = page.errors, requests = [];
  let loaded = false;
  page.listen((method, p) => {
    if (method === 'Network.requestWillBeSent') requests.push(p.request.url);
    else if (method === 'Page.loadEventFired') loaded = true;
  });
  await s('Network.enable');
  await s('Emulation.setDeviceMetricsOverride', { width: 1440, height: 1000, deviceScaleFactor: 1, mobile: false });
  await s('Page.navigate', { url: pathToFileURL(path.resolve(reportPath)).href });
  while (!loaded) await sleep(50);

  const probe = `(() => {
    const root = document.getElementById('root');
    const charts = {}, marks = {};
    for (const c of document.querySelectorAll('canvas[data-chart]')) {
      const ch = Chart.getChart(c);
      charts[c.getAttribute('data-chart')] = ch ? ch.data.datasets.map((d) => d.data.length) : null;
      const mk = ch && ch.options.plugins && ch.options.plugins.dlsweepMarks;  // regime bands, B_crit lines
      if (mk) marks[c.getAttribute('data-chart')] = { bands: (mk.bands || []).length, vlines: (mk.vlines || []).length, hlines: (mk.hlines || []).length };
    }
    const notes = [...document.querySelectorAll('p.note')].map((e) => e.textContent);
    const empty = {};
    for (const e of document.querySelectorAll('[data-empty]')) empty[e.getAttribute('data-chart')] = e.getAttribute('data-empty');
    const table = document.querySelector('table.trials');
    const scaling = {};  // the efficiency tables under the throughput charts: rows (header excluded)
    for (const t of document.querySelectorAll('table[data-scaling]')) scaling[t.getAttribute('data-scaling')] = t.rows.length - 1;
    // The critical batch per value (report/grouped_fit.js): param -> [[value, B_crit cell], ...].
    const grouped = {};
    for (const t of document.querySelectorAll('table.grouped-fit'))
      grouped[t.getAttribute('data-param')] = [...t.tBodies[0].rows].map((r) => [r.getAttribute('data-value'), r.children[1].textContent]);
    // Per line chart, each dataset's trial, point count and the attempts its points come from.
    const lines = {};
    for (const c of document.querySelectorAll('canvas[data-chart]')) {
      const ch = Chart.getChart(c);
      if (!ch || ch.config.type !== 'line') continue;
      lines[c.getAttribute('data-chart')] = ch.data.datasets.filter((d) => d.trial !== undefined).map((d) => ({
        trial: d.trial, points: d.data.length, attempts: [...new Set(d.data.map((p) => p.a).filter((a) => a !== undefined))].sort(),
        radius: Array.isArray(d.pointRadius) ? Math.max(0, ...d.pointRadius) : d.pointRadius }));
    }
    // The SVG charts (report/branch_cbs.js): per chart, how many of each mark it drew, and its text alternative.
    const svgs = {};
    for (const g of document.querySelectorAll('svg[data-chart]')) {
      const marks = {};
      for (const e of g.querySelectorAll('[data-mark]')) marks[e.getAttribute('data-mark')] = (marks[e.getAttribute('data-mark')] || 0) + 1;
      const t = g.querySelector('title'), d = g.querySelector('desc'), box = g.getBoundingClientRect();
      svgs[g.getAttribute('data-chart')] = { marks, title: t ? t.textContent : null, desc: d ? d.textContent : null,
        role: g.getAttribute('role'), width: box.width, height: box.height };
    }
    const hiddenLine = document.querySelector('[data-hidden-cards]');
    return JSON.stringify({
      lines,
      legend_trials: [...document.querySelectorAll('[data-legend-trial]')].map((e) => Number(e.getAttribute('data-legend-trial'))),
      hidden_cards: hiddenLine ? { ids: hiddenLine.getAttribute('data-hidden-cards').split(','), text: hiddenLine.textContent } : null,
      cards: [...document.querySelectorAll('section.card')].map((e) => e.id),
      text: root ? root.innerText : '',
      scaling_tables: scaling,
      grouped_fits: grouped,
      rendered: root ? root.getAttribute('data-rendered') : null,
      charts, empty, marks, notes, svgs,
      table_rows: table ? Number(table.getAttribute('data-rows')) : null,
      table_dom_rows: table ? table.tBodies[0].rows.length : null,
      external: [...document.querySelectorAll('[src],[href]')].map((e) => e.getAttribute('src') || e.getAttribute('href')),
      html_has_url: /https?:\\/\\//.test(document.documentElement.outerHTML),
      height: document.documentElement.scrollHeight,
    });
  })()`;
  let result;
  for (;;) {  // render() runs at the end of the page's own scripts; wait for its mark
    const r = await s('Runtime.evaluate', { expression: probe, returnByValue: true });
    result = JSON.parse(r.result.value);
    if (result.rendered) break;
    if (errors.length) break;  // the page failed before rendering: report that
    await sleep(100);
  }

  // Re-rendering with the same model (what serve does on each update) must not fail or leak charts.
  const again = await s('Runtime.evaluate', { returnByValue: true, expression: `(() => {
    const root = document.getElementById('root');
    const m = JSON.parse(document.getElementById('dlsweep-model').textContent);
    const counts = render(m, root);
    return JSON.stringify({ rendered: root.getAttribute('data-rendered'), counts,
      canvases: document.querySelectorAll('canvas[data-chart]').length, live: Object.keys(Chart.instances).length });
  })()` });
  result.rerender = again.exceptionDetails ? { error: again.exceptionDetails.exception?.description } : JSON.parse(again.result.value);

  // The user's toggles: hiding a state hides its trials' lines; sorting the table by the
  // objective puts the lowest value first; both undone afterwards (the screenshot is as loaded).
  const act = await s('Runtime.evaluate', { returnByValue: true, expression: `(() => {
    const out = {};
    const conv = document.querySelector('canvas[data-chart="convergence-step"]');
    const hidden = () => (conv ? Chart.getChart(conv).data.datasets.filter((d) => d.hidden).length : null);
    const box = document.querySelector('input[data-state-toggle="COMPLETE"]');
    if (box) { box.click(); out.hidden_complete = hidden(); box.click(); out.hidden_after_restore = hidden(); }
    const th = (k) => document.querySelector('table.trials th[data-key="' + k + '"]');
    if (th('value')) {
      th('value').click();
      const row = document.querySelector('table.trials tbody tr');
      out.sorted_first_value = row ? row.children[[...th('value').parentNode.children].indexOf(th('value'))].textContent : null;
      th('number').click();
      out.first_number_after_restore = document.querySelector('table.trials tbody tr').children[1].textContent;
    }
    return JSON.stringify(out);
  })()` });
  result.interaction = act.exceptionDetails ? { error: act.exceptionDetails.exception?.description } : JSON.parse(act.result.value);

  await s('Emulation.setDeviceMetricsOverride', { width: 1440, height: Math.min(Math.max(1000, result.height), 16000), deviceScaleFactor: 1, mobile: false });
  // The resize redraws every chart with its animation; on a big study (thousands of points)
  // that outlasts any fixed wait and the screenshot caught blank canvases. Draw each one
  // now, synchronously and without animation, at its new size, then wait until the browser
  // has painted them (two animation frames), not a guess.
  await s('Runtime.evaluate', { awaitPromise: true, expression: `new Promise((done) => {
    Object.values(Chart.instances).forEach((c) => { c.resize(); c.update('none'); });
    requestAnimationFrame(() => requestAnimationFrame(() => done(true)));
  })` });
  const shot = await s('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
  fs.writeFileSync(shotPath, Buffer.from(shot.data, 'base64'));
  // $DLSWEEP_SHOT_CARDS=DIR: also one PNG per chart card (to look at a chart at full size).
  const cardDir = process.env.DLSWEEP_SHOT_CARDS;
  if (cardDir) {
    fs.mkdirSync(cardDir, { recursive: true });
    const boxes = await s('Runtime.evaluate', { returnByValue: true, expression: `JSON.stringify([...document.querySelectorAll('section.card')].map((c) => {
      const r = c.getBoundingClientRect(); return { id: c.id, x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height }; }))` });
    for (const b of JSON.parse(boxes.result.value)) {
      const part = await s('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true,
        clip: { x: b.x, y: b.y, width: b.width, height: Math.min(b.height, 1400), scale: 1 } });
      fs.writeFileSync(path.join(cardDir, b.id + '.png'), Buffer.from(part.data, 'base64'));
    }
  }
  result.errors = errors;
  result.requests = requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:'));
  process.stdout.write(JSON.stringify(result) + '\n');
});
