// live.js — the live view's polling loop. The study page fetches /api/studies/NAME twice a
// second and hands the document to render(data, root) (the report's renderer, idempotent);
// the index page lists every study in the database. The page never writes anything.
// Hooks for tests and curious users: root.dataset.updates counts the renders, and
// root.dataset.version is the last document's length-and-hash, so a changed document
// is visible without knowing the renderer.
(function () {
  'use strict';
  var PERIOD_MS = 500;

  function setStatus(el, text, isError) {
    el.textContent = text;
    el.className = isError ? 'error' : '';
  }

  function hash(text) {  // FNV-1a, enough to tell documents apart
    var h = 0x811c9dc5;
    for (var i = 0; i < text.length; i++) { h ^= text.charCodeAt(i); h = Math.imul(h, 0x01000193) >>> 0; }
    return text.length + '-' + h.toString(16);
  }

  function poll(url, onText, statusEl) {
    var busy = false;
    function tick() {
      if (busy) return;
      busy = true;
      fetch(url + (url.indexOf('?') < 0 ? '?' : '&') + 't=' + Date.now(), {cache: 'no-store'})
        .then(function (r) {
          return r.text().then(function (t) {
            if (!r.ok) {
              var msg = r.status + ' ' + r.statusText;
              try { msg = JSON.parse(t).error || msg; } catch (e) {}
              throw new Error(msg);
            }
            return t;
          });
        })
        .then(function (t) { onText(t); setStatus(statusEl, 'live — updated ' + new Date().toLocaleTimeString(), false); })
        .catch(function (e) { setStatus(statusEl, 'not updated: ' + e.message + ' (retrying)', true); })
        .then(function () { busy = false; });
    }
    tick();
    return setInterval(tick, PERIOD_MS);
  }

  function cell(tr, text, cls) {
    var td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function studies(root, statusEl) {
    var last = '';
    poll('/api/studies', function (text) {
      if (text === last) return;
      last = text;
      var list = JSON.parse(text);
      root.textContent = '';
      if (!list.length) { root.textContent = 'No studies in this database yet (dlsweep submit STUDY).'; return; }
      var table = document.createElement('table');
      var head = table.insertRow();
      ['study', 'state', 'trials', 'by state', 'objective'].forEach(function (h) {
        var th = document.createElement('th'); th.textContent = h; head.appendChild(th);
      });
      list.forEach(function (s) {
        var tr = table.insertRow();
        tr.dataset.study = s.name;
        var a = document.createElement('a');
        a.href = '/study/' + encodeURIComponent(s.name);
        a.textContent = s.name;
        cell(tr, '').appendChild(a);
        cell(tr, s.state, 'state-' + s.state);
        cell(tr, String(s.trials), 'num');
        var byState = cell(tr, Object.keys(s.counts).map(function (k) { return k + ' ' + s.counts[k]; }).join(', '));
        if (s.site_limit) {  // what the site's submit limit holds back (dlsweep status says the same)
          var note = document.createElement('div');
          note.className = 'site-limit';
          note.textContent = 'site limit: ' + s.site_limit;
          byState.appendChild(note);
        }
        var o = s.objective;
        cell(tr, o.metric + ' (' + o.mode + (o.target === null ? '' : ', target ' + o.target) + ')');
      });
      root.appendChild(table);
      root.dataset.updates = String((+root.dataset.updates || 0) + 1);
    }, statusEl);
  }

  function study(root, statusEl) {
    var parts = location.pathname.split('/');
    var name = decodeURIComponent(parts[parts.length - 1] || parts[parts.length - 2] || '');
    document.title = 'dlsweep — ' + name;
    var last = '';
    poll('/api/studies/' + encodeURIComponent(name), function (text) {
      if (text === last) return;
      last = text;
      render(JSON.parse(text), root);  // the report's renderer: idempotent, replaces root's content
      root.dataset.version = hash(text);
      root.dataset.updates = String((+root.dataset.updates || 0) + 1);
    }, statusEl);
  }

  document.addEventListener('DOMContentLoaded', function () {
    var statusEl = document.getElementById('status');
    var list = document.getElementById('studies');
    var root = document.getElementById('root');
    if (list) studies(list, statusEl);
    else if (root) study(root, statusEl);
  });
})();
