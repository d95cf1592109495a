// One row: its members, its relations (expanded on demand), and the create and edit forms
// derived from the schema: input types, required members, defaults, validators as input
// constraints, enums as choices, relations as searchable pickers, read-only members shown and
// not sent, write-only members sent and never shown. Edits send `If-Match` with the row's
// ETag; a 412 shows the conflict instead of overwriting. A problem's detail is shown next to
// the member it names.

import * as api from './api.js';
import { h, replace, say, text, freshId } from './dom.js';
import { cell, confirmButton, searchExpression } from './list.js';
import { userPanel } from './users.js';

/** The input of one member, with its constraints. `value` is the current value, if any. */
function input(ctx, resource, m, value, mode) {
  const id = freshId(`field-${m.name}`);
  const common = { id, name: m.name, 'aria-describedby': `${id}-help ${id}-error` };
  const required = mode === 'create' && m.required && m.default === undefined;
  let el;
  if (m.enum) {
    el = h('select', common,
      (!required || m.nullable) ? h('option', { value: '' }, m.nullable ? '(none)' : '') : null,
      m.enum.map((v) => h('option', { value: v, selected: v === value }, String(v))));
  } else if (m.type === 'boolean') {
    if (m.nullable) {
      el = h('select', common, ['', 'true', 'false'].map((v) => h('option', { value: v, selected: String(value ?? '') === v }, v || '(none)')));
    } else {
      el = h('input', { ...common, type: 'checkbox', checked: value === undefined ? m.default === true : Boolean(value) });
    }
  } else if (m.type === 'integer' || m.type === 'number') {
    const bounded = (x) => (x !== undefined && Math.abs(x) < 1e15 ? x : null);
    el = h('input', {
      ...common, type: 'number', inputmode: m.type === 'integer' ? 'numeric' : 'decimal',
      step: m.type === 'integer' ? '1' : 'any', min: bounded(m.minimum), max: bounded(m.maximum),
      value: value ?? (mode === 'create' && m.default !== undefined ? m.default : ''),
    });
  } else if (m.type === 'json' || m.type === 'object' || m.type === 'array') {
    el = h('textarea', { ...common, rows: 3 });
    el.value = value === undefined || value === null ? '' : JSON.stringify(value, null, 2);
  } else {
    let type = 'text';
    if (m.writeOnly && /password/.test(m.name)) type = 'password';
    else if (m.format === 'email') type = 'email';
    else if (m.format === 'date') type = 'date';
    else if (m.format === 'uri') type = 'url';
    const long = type === 'text' && (m.maxLength || 0) > 500;
    const attrs = {
      ...common, type, minlength: m.minLength, maxlength: m.maxLength, pattern: m.pattern,
      autocomplete: type === 'password' ? 'new-password' : 'off',
    };
    if (long) {
      el = h('textarea', { ...attrs, rows: 3, type: null });
      el.value = value ?? '';
    } else {
      el = h('input', { ...attrs, value: value ?? (mode === 'create' && m.default !== undefined ? m.default : '') });
    }
    if (m.relation && m.relation.resource) el = picker(ctx, m, el);
  }
  if (required) (el.querySelector ? (el.matches('input,select,textarea') ? el : el.querySelector('input')) : el).setAttribute('required', '');
  return { id, el };
}

/**
 * A searchable picker for a relation's key: the text input keeps the id; typing searches the
 * related resource's text members and offers the matches (label and id) in a list.
 */
function picker(ctx, m, field) {
  const target = m.relation.resource;
  const list = h('datalist', { id: `${field.id}-choices` });
  field.setAttribute('list', list.id);
  field.setAttribute('placeholder', `${target.name} id, or type to search`);
  let timer = null;
  field.addEventListener('input', () => {
    clearTimeout(timer);
    const term = field.value.trim();
    if (!term || /^[0-9a-f-]{36}$/i.test(term) || !target.can('list', ctx.admin)) return;
    timer = setTimeout(async () => {
      const params = { page_size: 10 };
      const searchable = target.textMembers.filter((n) => target.shown(ctx.admin).some((x) => x.name === n));
      if (searchable.length) params.filter = searchExpression(searchable, term);
      try {
        const answer = await api.send('GET', target.collectionPath(), { params });
        replace(list, answer.body.data.map((row) => h('option', { value: row.id }, text(row.name || row.email || row.id))));
      } catch {
        replace(list);
      }
    }, 200);
  });
  return h('span', {}, field, list);
}

/** The value of a member's input, as JSON wants it; `undefined` leaves the member out. */
function read(m, el, mode) {
  const field = el.matches('input,select,textarea') ? el : el.querySelector('input,select,textarea');
  if (field.type === 'checkbox') return field.checked;
  const raw = field.value;
  if (raw === '') {
    if (mode === 'update') return m.nullable ? null : undefined;
    return undefined;
  }
  if (m.type === 'boolean') return raw === 'true';
  if (m.type === 'integer' || m.type === 'number') return Number(raw);
  if (m.type === 'json' || m.type === 'object' || m.type === 'array') {
    try { return JSON.parse(raw); } catch { return raw; }
  }
  return raw;
}

/**
 * The form of `resource` for `mode` (`create` or `update`). `row` holds the current values on
 * update; `submit(body)` sends it and resolves, or throws a `Problem`.
 */
function recordForm(ctx, resource, mode, row, submit) {
  const members = resource.shown(ctx.admin).filter((m) => (mode === 'create' ? m.creatable : m.updatable) && !m.file && (ctx.admin || !m.adminOnly));
  // File members go up as parts of a multipart body beside the JSON part `data`.
  const uploads = resource.shown(ctx.admin).filter((m) => m.file && m.upload && m.upload[mode]);
  const fields = new Map();
  const errors = new Map();
  const formError = h('p', { class: 'field-error', role: 'alert', id: `${mode}-form-error` });
  const form = h('form', { class: 'record', id: `${mode}-form`, novalidate: null, 'aria-label': mode === 'create' ? `New ${resource.name}` : `Edit ${resource.name}` });
  for (const m of members) {
    const current = row ? row[m.name] : undefined;
    const { id, el } = input(ctx, resource, m, m.writeOnly ? undefined : current, mode);
    const err = h('p', { class: 'field-error', id: `${id}-error`, dataset: { errorFor: m.name } });
    const help = h('p', { class: 'field-help', id: `${id}-help` }, m.description.replace(/`/g, ''));
    fields.set(m.name, el);
    errors.set(m.name, err);
    form.append(
      h('label', { class: 'field-label', for: id }, m.label, (mode === 'create' && m.required && m.default === undefined) ? ' *' : ''),
      h('div', {}, el, help, err));
  }
  const files = new Map();
  for (const m of uploads) {
    const id = freshId(`file-${m.name}`);
    const el = h('input', { id, name: m.name, type: 'file', accept: m.accept.replace(/\s+/g, ''), 'aria-describedby': `${id}-help ${id}-error` });
    const err = h('p', { class: 'field-error', id: `${id}-error`, dataset: { errorFor: m.name } });
    files.set(m.name, el);
    fields.set(m.name, el);
    errors.set(m.name, err);
    form.append(h('label', { class: 'field-label', for: id }, m.label),
      h('div', {}, el, h('p', { class: 'field-help', id: `${id}-help` }, m.description.replace(/`/g, '')), err));
  }
  const button = h('button', { type: 'submit', id: `${mode}-submit` }, mode === 'create' ? 'Create' : 'Save');
  form.append(h('div', { class: 'actions' }, button), formError);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const [name, err] of errors) {
      err.textContent = '';
      const f = fields.get(name);
      const target = f.matches('input,select,textarea') ? f : f.querySelector('input,select,textarea');
      target.removeAttribute('aria-invalid');
    }
    formError.textContent = '';
    const body = {};
    for (const m of members) {
      const v = read(m, fields.get(m.name), mode);
      if (v === undefined) continue;
      if (mode === 'update' && !m.writeOnly && JSON.stringify(v) === JSON.stringify(row[m.name] ?? null)) continue;
      body[m.name] = v;
    }
    const chosen = [...files].filter(([, el]) => el.files && el.files.length);
    let multipart = null;
    if (chosen.length) {
      multipart = new FormData();
      multipart.append('data', new Blob([JSON.stringify(body)], { type: 'application/json' }));
      for (const [name, el] of chosen) multipart.append(name, el.files[0], el.files[0].name);
    }
    button.disabled = true;
    try {
      await submit(body, multipart);
    } catch (e) {
      showProblem(e, errors, fields, formError);
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

/** Puts a problem's details next to the members they name, the rest under the form. */
function showProblem(e, errors, fields, formError) {
  let placed = false;
  for (const [member, detail] of (e.details || [[null, e.message]])) {
    const name = member && member.split(/[./]/).filter(Boolean)[0];
    if (name && errors.has(name)) {
      errors.get(name).textContent = detail;
      const f = fields.get(name);
      const target = f.matches('input,select,textarea') ? f : f.querySelector('input,select,textarea');
      target.setAttribute('aria-invalid', 'true');
      if (!placed) target.focus();
      placed = true;
    } else {
      formError.textContent = formError.textContent ? `${formError.textContent} ${detail}` : detail;
    }
  }
  if (!placed) formError.focus?.();
}

/** The page to create a row of `resource`. */
export function createView(ctx, resource) {
  if (!resource.can('create', ctx.admin)) {
    replace(ctx.view, h('h2', {}, `New ${resource.name}`), h('p', {}, 'You may not create these.'));
    return;
  }
  const form = recordForm(ctx, resource, 'create', null, async (body, multipart) => {
    const answer = await api.send('POST', resource.collectionPath(), multipart ? { form: multipart } : { body });
    say(`Created ${answer.body.name || answer.body.email || answer.body.id}.`, 'ok');
    location.hash = `#/${resource.key}/${encodeURIComponent(answer.body.id)}`;
  });
  replace(ctx.view, h('p', {}, h('a', { href: `#/${resource.key}` }, `← ${resource.label}`)), h('h2', {}, `New ${resource.name}`), form);
}

/** The page of one row: its members, relations, edit form, delete and restore. */
export async function recordView(ctx, resource, id) {
  replace(ctx.view, h('p', {}, 'Loading…'));
  let answer;
  try {
    answer = await api.send('GET', resource.itemPath('get', id), { params: resource.includeDeleted && ctx.admin ? { include_deleted: 'true' } : {} });
  } catch (e) {
    replace(ctx.view, h('p', {}, h('a', { href: `#/${resource.key}` }, `← ${resource.label}`)), h('p', { class: 'error', role: 'alert' }, e.message));
    return;
  }
  let row = answer.body;
  let etag = answer.etag;
  const deleted = Boolean(row.deleted_at || row.is_deleted);
  const title = text(row.name || row.email || row.id);
  const details = h('dl', { class: 'record', id: 'record' });
  const drawDetails = () => replace(details, resource.shown(ctx.admin).filter((m) => m.readable).map((m) => [
    h('dt', {}, m.label),
    h('dd', { dataset: { member: m.name } }, m.file ? fileValue(row[m.name]) : cell(row[m.name], m))]));
  drawDetails();
  const conflict = h('div', { id: 'conflict', hidden: true, class: 'conflict', role: 'alert' });
  const parts = [
    h('p', {}, h('a', { href: `#/${resource.key}` }, `← ${resource.label}`)),
    h('h2', {}, `${resource.name}: `, title),
    details,
  ];
  // Relations, fetched when opened.
  for (const rel of resource.relations) {
    const body = h('div', {}, 'Loading…');
    const box = h('details', { dataset: { relation: rel.name } }, h('summary', {}, `${humanizeRel(rel)}`), body);
    box.addEventListener('toggle', async () => {
      if (!box.open || box.dataset.loaded) return;
      box.dataset.loaded = 'yes';
      try {
        const a = await api.send('GET', resource.itemPath('get', id), { params: { expand: rel.name } });
        replace(body, relatedValue(rel, a.body[rel.name]));
      } catch (e) {
        replace(body, h('p', { class: 'error' }, e.message));
      }
    });
    parts.push(box);
  }
  const actions = h('div', { class: 'toolbar' });
  if (deleted && resource.canRow('restore', ctx.admin, row, ctx.me)) {
    actions.append(h('button', { type: 'button', id: 'restore', onclick: async () => {
      try {
        await api.send('POST', resource.itemPath('restore', id), { headers: etag ? { 'If-Match': etag } : {} });
        say('Restored.', 'ok');
        recordView(ctx, resource, id);
      } catch (e) { say(e.message, 'error'); }
    } }, 'Restore'));
  }
  if (!deleted && resource.canRow('delete', ctx.admin, row, ctx.me)) {
    actions.append(confirmButton('Delete', `Delete ${title}`, async () => {
      try {
        await api.send('DELETE', resource.itemPath('delete', id), { headers: etag ? { 'If-Match': etag } : {} });
        say('Deleted.', 'ok');
        location.hash = `#/${resource.key}`;
      } catch (e) {
        if (e.status === 412) showConflict();
        else say(e.message, 'error');
      }
    }));
  }
  parts.push(actions, conflict);
  async function showConflict() {
    let current = null;
    try {
      current = (await api.send('GET', resource.itemPath('get', id))).body;
    } catch { /* shown without it */ }
    conflict.hidden = false;
    replace(conflict,
      h('h3', {}, 'Changed by someone else'),
      h('p', {}, 'This row changed since you opened it, so nothing was saved. Its current values:'),
      current ? h('dl', { class: 'record' }, resource.shown(ctx.admin).filter((m) => m.readable).map((m) => [h('dt', {}, m.label), h('dd', {}, cell(current[m.name], m))])) : null,
      h('button', { type: 'button', class: 'secondary', id: 'conflict-reload', onclick: () => recordView(ctx, resource, id) }, 'Load the current version'));
    say('Not saved: the row changed meanwhile.', 'error');
  }
  if (!deleted && resource.canRow('update', ctx.admin, row, ctx.me)) {
    parts.push(h('h3', {}, 'Edit'), recordForm(ctx, resource, 'update', row, async (body, multipart) => {
      if (!Object.keys(body).length && !multipart) { say('Nothing to save.'); return; }
      try {
        const headers = etag ? { 'If-Match': etag } : {};
        const a = await api.send('PATCH', resource.itemPath('update', id), multipart ? { form: multipart, headers } : { body, headers });
        row = a.body;
        etag = a.etag || etag;
        drawDetails();
        conflict.hidden = true;
        say('Saved.', 'ok');
      } catch (e) {
        if (e.status === 412) { showConflict(); return; }
        throw e;
      }
    }));
  }
  if (resource.isUsers) parts.push(userPanel(ctx, resource, row, () => recordView(ctx, resource, id)));
  replace(ctx.view, ...parts);
  // The ETag the form edits against, for tests and for the curious.
  ctx.view.dataset.etag = etag || '';
}

function humanizeRel(rel) {
  const t = rel.name.replace(/_/g, ' ');
  return `${t.charAt(0).toUpperCase()}${t.slice(1)} (${rel.many ? 'list of' : 'one'} ${rel.target})`;
}

/** An embedded relation: a list of rows as a small table, one row as a list, none as text. */
function relatedValue(rel, value) {
  if (value === null || value === undefined || (Array.isArray(value) && !value.length)) return h('p', {}, 'None.');
  const rows = Array.isArray(value) ? value : [value];
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const link = (r) => (rel.resource && r.id ? h('a', { href: `#/${rel.resource.key}/${encodeURIComponent(r.id)}` }, text(r.name || r.id)) : text(r.name || r.id));
  return h('table', {},
    h('thead', {}, h('tr', {}, keys.map((k) => h('th', { scope: 'col' }, k)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, keys.map((k) => h('td', {}, k === 'id' ? link(r) : text(r[k])))))));
}

/** A file member: its name and, for an image, a preview through its (read-rule checked) URL. */
function fileValue(value) {
  if (!value || typeof value !== 'object') return text(value);
  const parts = [h('span', {}, `${text(value.name)} (${text(value.type)}, ${text(value.size)} bytes)`)];
  if (value.url && /^image\//.test(value.type || '')) {
    const img = h('img', { class: 'preview', alt: `Preview of ${value.name}` });
    parts.push(img);
    fetchPreview(value.url, img);
  }
  return h('span', {}, parts);
}

async function fetchPreview(url, img) {
  try {
    const blob = await api.blob(url);
    img.src = URL.createObjectURL(blob);
  } catch {
    img.remove();
  }
}
