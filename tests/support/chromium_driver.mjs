// chromium_driver.mjs — headless Chromium driven over the DevTools protocol, for the page
// tests (tests/report/chromium_check.mjs: the offline report; tests/serve/live_check.mjs: the
// live view). No npm package: a minimal WebSocket client (RFC 6455, text frames, client
// masking) is written below on node's http/net, so it runs on Debian's node 18 as on newer ones.
//
//   import { runInChromium, sleep } from '../support/chromium_driver.mjs';
//   runInChromium('my_check', CHROMIUM, { args: ['--hide-scrollbars'], timeoutMs }, async (page) => {
//     await page.send('Page.navigate', { url });   // page.errors: console errors, exceptions, log errors
//   });
//
// runInChromium starts Chromium with a fresh profile, opens one tab (Runtime, Log and Page
// enabled), runs the body, then kills Chromium, removes the profile and exits: 0 when the body
// resolved, 1 with `name: error` and Chromium's stderr when it threw or the whole run outlasted
// timeoutMs (a bound on a hang only; the machine may be loaded).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Chromium writes the port it chose (port 0) into DevToolsActivePort in the profile.
async function devtoolsEndpoint(chrome, profile, log) {
  const file = path.join(profile, 'DevToolsActivePort');
  for (;;) {
    if (chrome.exitCode !== null) throw new Error(`chromium exited with ${chrome.exitCode}:\n${log()}`);
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

// One tab: page.send(method, params) in its session, page.listen(fn) for its events,
// page.errors for what it reported as an error.
async function openTab(port, wsPath) {
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
  const page = {
    errors: [],
    send: (method, params) => send(method, params, sessionId),
    listen: (fn) => listeners.push((msg) => { if (msg.sessionId === sessionId) fn(msg.method, msg.params); }),
  };
  page.listen((method, p) => {
    if (method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'assert'))
      page.errors.push({ source: 'console.' + p.type, text: p.args.map((a) => a.value ?? a.description ?? '').join(' ') });
    else if (method === 'Runtime.exceptionThrown')
      page.errors.push({ source: 'exception', text: p.exceptionDetails.exception?.description || p.exceptionDetails.text });
    else if (method === 'Log.entryAdded' && p.entry.level === 'error')
      page.errors.push({ source: 'log.' + p.entry.source, text: p.entry.text });
  });
  await page.send('Runtime.enable');
  await page.send('Log.enable');
  await page.send('Page.enable');
  return page;
}

export function runInChromium(name, chromiumBin, { args = [], timeoutMs = 240000 }, body) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `dlsweep-${name}-`));
  const chrome = spawn(chromiumBin, [
    '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
    '--no-default-browser-check', '--disable-extensions', '--disable-background-networking',
    ...args, '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let chromeLog = '';
  chrome.stderr.on('data', (d) => { chromeLog = (chromeLog + d).slice(-4000); });
  const cleanup = () => {
    try { chrome.kill('SIGKILL'); } catch (e) { /* already gone */ }
    try { fs.rmSync(profile, { recursive: true, force: true }); } catch (e) { /* best effort */ }
  };
  const deadline = setTimeout(() => {
    process.stderr.write(`${name}: no result within ${timeoutMs / 1000} s\n${chromeLog}\n`);
    cleanup();
    process.exit(1);
  }, timeoutMs);
  const main = async () => {
    const { port, wsPath } = await devtoolsEndpoint(chrome, profile, () => chromeLog);
    await body(await openTab(port, wsPath));
  };
  main().then(() => { clearTimeout(deadline); cleanup(); process.exit(0); },
    (e) => { clearTimeout(deadline); process.stderr.write(`${name}: ${e.stack || e}\n${chromeLog}\n`); cleanup(); process.exit(1); });
}
