// A resource's data as a whole, each part offered only when the description has its
// operation: a chart of its aggregates (`aggregate<Name>`: count, or a sum or average of a
// number, per group of a member), the download of what the list shows as CSV
// (`export<Name>`, with the list's filters and sort), and the upload of a CSV or NDJSON file
// of new items (`import<Name>`, all or nothing, its errors listed by line).

import * as api from './api.js';
import { h, replace, say, text } from './dom.js';

/** The enum a (list) parameter of `op` allows, or []. */
function allowed(op, name) {
  const p = (op.parameters || []).find((x) => x && x.name === name);
  const s = p && p.schema;
  if (!s) return [];
  return (s.items && s.items.enum) || s.enum || [];
}

/** `created_at:day` -> `Created at (day)`; `cuteness_level` -> `Cuteness level`. */
function label(resource, key) {
  const [name, trunc] = key.split(':');
  const m = resource.members.find((x) => x.name === name);
  const base = m ? m.label : name.replace(/_/g, ' ');
  return trunc ? `${base} (${trunc})` : base;
}

/** The chart panel of `resource`, or null when it has no aggregates; `filters()` gives the list's current filter parameters. */
export function chartPanel(resource, filters) {
  const op = resource.ops.aggregate && !resource.ops.aggregate.path.includes('{') && resource.ops.aggregate.op;
  if (!op) return null;
  const keys = allowed(op, 'group_by');
  if (!keys.length) return null;
  const measures = [['count', 'Count']];
  for (const metric of ['avg', 'sum']) {
    for (const member of allowed(op, metric)) {
      measures.push([`${metric}:${member}`, `${metric === 'avg' ? 'Average' : 'Sum'} of ${label(resource, member).toLowerCase()}`]);
    }
  }
  const by = h('select', { id: 'chart-by' }, keys.map((k) => h('option', { value: k }, label(resource, k))));
  const measure = h('select', { id: 'chart-measure' }, measures.map(([v, l]) => h('option', { value: v }, l)));
  const holder = h('div', { id: 'chart', 'aria-live': 'polite' });
  const draw = async (event) => {
    if (event) event.preventDefault();
    const [metric, member] = measure.value.split(':');
    const params = { ...filters(), group_by: by.value, sort: metric === 'count' ? '-count' : `-${metric}_${member}`, page_size: 50 };
    if (member) params[metric] = member;
    let answer;
    try {
      answer = await api.send('GET', resource.ops.aggregate.path, { params });
    } catch (e) {
      replace(holder, h('p', { class: 'error', role: 'alert' }, e.message));
      return;
    }
    const key = metric === 'count' ? 'count' : `${metric}_${member}`;
    const groups = answer.body.groups || [];
    const values = groups.map((g) => Number(g[key]) || 0);
    const max = Math.max(1, ...values);
    replace(holder, groups.length
      ? h('table', { class: 'chart', 'aria-label': `${measure.selectedOptions[0].textContent} by ${label(resource, by.value).toLowerCase()}` },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, label(resource, by.value)), h('th', { scope: 'col' }, measure.selectedOptions[0].textContent), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Bar')))),
        h('tbody', {}, groups.map((g, i) => h('tr', { dataset: { group: text(g[by.value.split(':')[0]]) } },
          h('th', { scope: 'row' }, g[by.value.split(':')[0]] === null ? '(none)' : text(g[by.value.split(':')[0]])),
          h('td', { class: 'number' }, Number.isInteger(values[i]) ? String(values[i]) : values[i].toFixed(2)),
          h('td', {}, h('meter', { min: 0, max, value: values[i], 'aria-hidden': 'true' }))))))
      : h('p', {}, 'No rows.'));
    say(`Chart of ${groups.length} groups`);
  };
  return h('details', { id: 'chart-panel' }, h('summary', {}, 'Chart'),
    h('form', { class: 'toolbar', 'aria-label': 'Chart', onsubmit: draw },
      h('label', { for: 'chart-by' }, 'Group by', by),
      h('label', { for: 'chart-measure' }, 'Measure', measure),
      h('button', { type: 'submit', id: 'chart-draw', class: 'secondary' }, 'Draw')),
    holder);
}

/** The download button of `resource` (CSV of what the list's filters and sort select), or null. */
export function exportButton(resource, params) {
  const op = resource.ops.export;
  if (!op || op.path.includes('{')) return null;
  return h('button', { type: 'button', class: 'secondary', id: 'export-csv', title: op.who ? `Who may export: ${op.who}` : null, onclick: async () => {
    try {
      const file = await api.blob(op.path + api.query({ ...params(), format: 'csv' }));
      const a = h('a', { href: URL.createObjectURL(file), download: `${resource.key}.csv` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
      say('Downloaded.', 'ok');
    } catch (e) {
      say(e.message, 'error');
    }
  } }, 'Download CSV');
}

/** The upload form of `resource` (a CSV or NDJSON file of new items), or null; `done()` reloads the list. */
export function importForm(resource, done) {
  const op = resource.ops.import;
  if (!op || op.path.includes('{')) return null;
  const input = h('input', { id: 'import-file', type: 'file', accept: '.csv,.ndjson,.jsonl,text/csv,application/x-ndjson' });
  const report = h('div', { id: 'import-report', 'aria-live': 'polite' });
  return h('details', { id: 'import-panel' }, h('summary', {}, 'Import'),
    op.who ? h('p', { id: 'import-who' }, `Who may import: ${op.who}.`) : null,
    h('form', { class: 'toolbar', 'aria-label': 'Import a file', onsubmit: async (event) => {
      event.preventDefault();
      const file = input.files && input.files[0];
      if (!file) return;
      const type = /\.(ndjson|jsonl)$/i.test(file.name) ? 'application/x-ndjson' : 'text/csv';
      try {
        const answer = await api.send('POST', op.path, { form: file, headers: { 'Content-Type': type } });
        replace(report, h('p', { class: 'ok' }, `Created ${answer.body.created} items.`));
        done();
      } catch (e) {
        replace(report, h('p', { class: 'error', role: 'alert' }, e.message),
          h('ul', {}, e.details.map(([member, detail]) => h('li', {}, member ? `${member}: ${detail}` : detail))));
      }
    } },
    h('label', { for: 'import-file' }, 'CSV or NDJSON file', input),
    h('button', { type: 'submit', id: 'import-send', class: 'secondary' }, 'Import')),
    report);
}
