// trial_table.js — the report's sortable table of every trial: state, parameters, value, steps
// and time to target, throughput, attempt and the failure or prune reason; a click on a column
// sorts by it (again: reversed), "show" hides or shows the trial on the line charts. Embedded
// after render.js (report/CMakeLists.txt), which calls dlsweepTrialTable(state, root, m, helpers).
(function (global) {
  'use strict';

  // ---- 10. sortable trial table
  function table(state, root, m, h) {
    const { el, card, emptyNote, fmt, STATE_COLOR, isHidden, applyVisibility, render } = h;
    const c = card(root, 'trials', `Trials (${m.trials.length})`,
      'Click a column to sort (again to reverse). "show" hides or shows the trial on the line charts.');
    if (!m.trials.length) return emptyNote(c, 'trials', 'the study has no trial yet');
    const params = m.param_names;
    const cols = [
      { k: 'show', label: 'show' }, { k: 'number', label: '#' }, { k: 'state', label: 'state' },
      ...params.map((p) => ({ k: 'p:' + p, label: p })),
      { k: 'value', label: m.study.objective_metric }, { k: 'steps_to_target', label: 'steps to target' },
      { k: 'time_to_target_s', label: 'time to target (s)' }, { k: 'samples_per_s', label: 'samples/s' },
      { k: 'attempt', label: 'attempt' }, { k: 'message', label: 'failure / prune reason' },
    ];
    const get = (t, k) => (k.startsWith('p:') ? t.params[k.slice(2)] : t[k]);
    const sorted = m.trials.slice();
    const { key, dir } = state.sort;
    if (key !== 'show') {
      sorted.sort((a, b) => {
        const x = get(a, key), y = get(b, key);
        const nx = x === null || x === undefined, ny = y === null || y === undefined;
        if (nx || ny) return nx === ny ? a.number - b.number : nx ? 1 : -1;  // missing values last
        if (typeof x === 'number' && typeof y === 'number') return (x - y) * dir || a.number - b.number;
        return String(typeof x === 'object' ? JSON.stringify(x) : x).localeCompare(String(typeof y === 'object' ? JSON.stringify(y) : y)) * dir || a.number - b.number;
      });
    }
    const thead = el('tr');
    for (const col of cols) {
      const arrow = state.sort.key === col.k ? (state.sort.dir > 0 ? ' ▲' : ' ▼') : '';
      thead.append(el('th', { 'data-key': col.k, onclick: () => {
        state.sort = { key: col.k, dir: state.sort.key === col.k ? -state.sort.dir : 1 };
        render(state.model, state.root);
      } }, col.label + arrow));
    }
    const tbody = el('tbody');
    for (const t of sorted) {
      const tr = el('tr', { 'data-state': t.state });
      for (const col of cols) {
        if (col.k === 'show') {
          const box = el('input', { type: 'checkbox', 'data-trial-toggle': String(t.number) });
          box.checked = !isHidden(state, t);
          box.addEventListener('change', () => {
            if (box.checked) state.hiddenTrials.delete(t.number); else state.hiddenTrials.add(t.number);
            applyVisibility(state, m);
          });
          tr.append(el('td', {}, box));
        } else if (col.k === 'state') {
          tr.append(el('td', { style: `color:${STATE_COLOR[t.state] || '#212529'}`, text: t.state }));
        } else {
          const v = get(t, col.k);
          tr.append(el('td', { class: typeof v === 'number' ? 'num' : col.k === 'message' ? 'msg' : '', text: fmt(v), title: col.k === 'message' ? String(v || '') : '' }));
        }
      }
      tbody.append(tr);
    }
    const tbl = el('table', { class: 'trials', 'data-rows': String(sorted.length) }, el('thead', {}, thead), tbody);
    c.append(el('div', { class: 'tablewrap' }, tbl));
  }

  global.dlsweepTrialTable = table;
})(typeof window !== 'undefined' ? window : this);
