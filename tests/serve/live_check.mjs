// live_check.mjs — the live view in headless Chromium while a sweep runs: opens the study
// page of `dlsweep serve`, waits until it shows trial N as RUNNING, then releases that trial
// (creates its gate file) and measures how long the page takes to show it COMPLETE. Prints one
// JSON object: {before, seen_ms, after, updates, errors}. Driven over the DevTools protocol
// by tests/support/chromium_driver.mjs, as tests/report/chromium_check.mjs is.
//
//   node live_check.mjs CHROMIUM URL GATE_FILE TRIAL_NUMBER [TIMEOUT_S]
//
// Exit 0 with the JSON on stdout (the C++ test judges it); exit 1 if Chromium could not be
// driven or the page never showed the trial (a failure, not a skip).
import fs from 'node:fs';

import { runInChromium, sleep } from '../support/chromium_driver.mjs';

const [chromiumBin, url, gateFile, trialArg, timeoutArg] = process.argv.slice(2);
if (!chromiumBin || !url || !gateFile || trialArg === undefined) {
  process.stderr.write('usage: node live_check.mjs CHROMIUM URL GATE_FILE TRIAL_NUMBER [TIMEOUT_S]\n');
  process.exit(2);
}
const trial = Number(trialArg);
const timeoutMs = 1000 * Number(timeoutArg || 240);  // bounds a hang only

const args = ['--disable-background-timer-throttling', '--disable-renderer-backgrounding'];
runInChromium('live_check', chromiumBin, { args, timeoutMs }, async (page) => {
  const s = page.send, errors = page.errors;
  await s('Emulation.setDeviceMetricsOverride', { width: 1280, height: 900, deviceScaleFactor: 1, mobile: false });
  await s('Page.navigate', { url });

  // The state the page shows for the trial: its row in the report's trial table (the row
  // holding the trial's show/hide box), as rendered — not the JSON behind it.
  const probe = `(() => {
    const root = document.getElementById('root');
    const box = document.querySelector('table.trials input[data-trial-toggle="${trial}"]');
    const row = box ? box.closest('tr') : null;
    return JSON.stringify({ state: row ? row.getAttribute('data-state') : null,
                            text: row ? row.textContent : null,
                            updates: root ? Number(root.dataset.updates || 0) : 0,
                            status: (document.getElementById('status') || {}).textContent || '',
                            href: location.href });
  })()`;
  const look = async () => {
    const r = await s('Runtime.evaluate', { expression: probe, returnByValue: true });
    if (r.exceptionDetails) throw new Error('probe failed: ' + JSON.stringify(r.exceptionDetails));
    return JSON.parse(r.result.value);
  };
  let before;
  for (;;) {
    before = await look();
    if (before.state === 'RUNNING') break;
    await sleep(100);
  }
  fs.writeFileSync(gateFile, 'go\n');  // the trial program finishes now
  const t0 = Date.now();
  let after;
  for (;;) {
    after = await look();
    if (after.state === 'COMPLETE') break;
    if (Date.now() - t0 > 60000) throw new Error('the page never showed the trial COMPLETE: ' + JSON.stringify(after));
    await sleep(50);
  }
  const seen_ms = Date.now() - t0;
  process.stdout.write(JSON.stringify({ before, seen_ms, after, updates: after.updates, errors }) + '\n');
});
