// live_check.mjs — the live view in headless Chromium while a sweep runs: opens the study
// page of `dlsweep serve`, waits until it shows trial N as RUNNING, then releases that trial
// (creates its gate file) and measures how long the page takes to show it COMPLETE. Prints one
// JSON object: {before, seen_ms, after, updates, errors}. Driven over the DevTools protocol
// with the same dependency-free WebSocket client as tests/report/chromium_check.mjs.
//
//   node live_check.mjs CHROMIUM URL GATE_FILE TRIAL_NUMBER [TIMEOUT_S]
//
// Exit 0 with the JSON on stdout (the C++ test judges it); exit 1 if Chromium could not be
// driven or the page never showed the trial (a failure, not a skip).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const [chromiumBin, url, gateFile, trialArg, timeoutArg] = process.argv.slice(2);
if (!chromiumBin || !url || !gateFile || trialArg === undefined) {
  process.stderr.write('usage: node live_check.mjs CHROMIUM URL GATE_FILE TRIAL_NUMBER [TIMEOUT_S]\n');
  process.exit(2);
}
const trial = Number(trialArg);
const timeoutMs = 1000 * Number(timeoutArg || 240);  // bounds a hang only
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'dlsweep-live-'));
const chrome = spawn(chromiumBin, [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
  '--no-default-browser-check', '--disable-extensions', '--disable-background-networking',
  '--disable-background-timer-throttling', '--disable-renderer-backgrounding',
  '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe'] });
let chromeLog = '';
chrome.stderr.on('data', (d) => { chromeLog = (chromeLog + d).slice(-4000); });

function cleanup() {
  try { chrome.kill('SIGKILL'); } catch (e) { /* already gone */ }
  try { fs.rmSync(profile, { recursive: true, force: true }); } catch (e) { /* best effort */ }
}
const deadline = setTimeout(() => {
  process.stderr.write(`live_check: no result within ${timeoutMs / 1000} s\n${chromeLog}\n`);
  cleanup();
  process.exit(1);
}, timeoutMs);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function devtoolsEndpoint() {
  const file = path.join(profile, 'DevToolsActivePort');
  for (;;) {
    if (chrome.exitCode !== null) throw new Error(`chromium exited with ${chrome.exitCode}:\n${chromeLog}`);
    try {
      const [port, wsPath] = fs.readFileSync(file, 'utf8').split('\n');
      if (port && wsPath) return { port: Number(port), wsPath };
    } catch (e) { /* not written yet */ }
    await sleep(100);
  }
}

// ---- minimal WebSocket client
function wsConnect(port, wsPath) {
  return new Promise((resolve, reject) => {
    const key = crypto.randomBytes(16).toString('base64');
    const req = http.request({ host: '127.0.0.1', port, path: wsPath, headers: {
      Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13' } });
    req.on('upgrade', (res, socket) => {
      let buf = Buffer.alloc(0), parts = [];
      const ws = { onmessage: null, send(text) {
        const payload = Buffer.from(text, 'utf8'), mask = crypto.randomBytes(4);
        let head;
        if (payload.length < 126) head = Buffer.from([0x81, 0x80 | payload.length]);
        else if (payload.length < 65536) { head = Buffer.alloc(4); head[0] = 0x81; head[1] = 0x80 | 126; head.writeUInt16BE(payload.length, 2); }
        else { head = Buffer.alloc(10); head[0] = 0x81; head[1] = 0x80 | 127; head.writeBigUInt64BE(BigInt(payload.length), 2); }
        for (let i = 0; i < payload.length; ++i) payload[i] ^= mask[i & 3];
        socket.write(Buffer.concat([head, mask, payload]));
      } };
      socket.on('data', (d) => {
        buf = Buffer.concat([buf, d]);
        for (;;) {
          if (buf.length < 2) return;
          const fin = buf[0] & 0x80, op = buf[0] & 0x0f;
          let len = buf[1] & 0x7f, off = 2;
          if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
          else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
          if (buf.length < off + len) return;
          const payload = buf.subarray(off, off + len);
          buf = buf.subarray(off + len);
          if (op === 0x8) { socket.end(); return; }
          if (op === 0x9 || op === 0xa) continue;  // ping/pong: Chromium does not need answers here
          parts.push(Buffer.from(payload));
          if (fin) { const text = Buffer.concat(parts).toString('utf8'); parts = []; ws.onmessage && ws.onmessage(text); }
        }
      });
      socket.on('error', reject);
      resolve(ws);
    });
    req.on('response', (res) => reject(new Error(`no websocket upgrade: HTTP ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  });
}

async function main() {
  const { port, wsPath } = await devtoolsEndpoint();
  const ws = await wsConnect(port, wsPath);
  let nextId = 1;
  const pending = new Map(), listeners = [];
  ws.onmessage = (text) => {
    const msg = JSON.parse(text);
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(JSON.stringify(msg.error))); else resolve(msg.result);
    } else if (msg.method) for (const l of listeners) l(msg);
  };
  const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    ws.send(JSON.stringify(sessionId ? { id, method, params, sessionId } : { id, method, params }));
  });
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  const s = (method, params) => send(method, params, sessionId);
  const errors = [];
  listeners.push((msg) => {
    if (msg.sessionId !== sessionId) return;
    const p = msg.params;
    if (msg.method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'assert'))
      errors.push({ source: 'console.' + p.type, text: p.args.map((a) => a.value ?? a.description ?? '').join(' ') });
    else if (msg.method === 'Runtime.exceptionThrown')
      errors.push({ source: 'exception', text: p.exceptionDetails.exception?.description || p.exceptionDetails.text });
    else if (msg.method === 'Log.entryAdded' && p.entry.level === 'error')
      errors.push({ source: 'log.' + p.entry.source, text: p.entry.text });
  });
  await s('Runtime.enable');
  await s('Log.enable');
  await s('Page.enable');
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
}

main().then(() => { clearTimeout(deadline); cleanup(); process.exit(0); },
  (e) => { clearTimeout(deadline); process.stderr.write(`live_check: ${e.stack || e}\n${chromeLog}\n`); cleanup(); process.exit(1); });
