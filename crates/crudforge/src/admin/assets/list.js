// The list of one resource: paging, sorting by the sortable members, simple filters and the
// `filter` expression, named filters, search on text members, the member chooser, deleted
// rows and their restore, and batch delete of the selected rows: each offered only when the
// description says the resource has it and the caller may use it.

import * as api from './api.js';
import { h, replace, say, text, freshId } from './dom.js';
import { follow } from './live.js';
import { chartPanel, exportButton, importForm } from './data.js';

const OPERATORS = {
  eq: '=', ne: '≠', gt: '>', gte: '≥', lt: '<', lte: '≤', like: 'like', ilike: 'ilike (any case)',
  in: 'in (comma list)', isnull: 'is null (true/false)', from: 'from (date)', to: 'to (date)',
};

/** What each resource's list was showing, so that coming back keeps it. */
const remembered = new Map();

/** Quotes `value` for a filter expression. */
function quoted(value) {
  return `'${String(value).replace(/'/g, "''")}'`;
}

/** The search expression over the text members: `(a ilike '%x%' or b ilike '%x%')`. */
export function searchExpression(members, term) {
  const like = quoted(`%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  return `(${members.map((m) => `${m} ilike ${like}`).join(' or ')})`;
}

/** Shows the list of `resource` in `ctx.view`. */
export function listView(ctx, resource) {
  const { admin } = ctx;
  const shown = resource.shown(admin);
  // Text members the caller may filter by (an administrators-only one is not).
  const searchable = resource.textMembers.filter((n) => shown.some((m) => m.name === n));
  const st = remembered.get(resource.key) || {
    page: 1,
    pageSize: 25,
    sort: '',
    filters: [],
    expression: '',
    search: '',
    scope: '',
    includeDeleted: false,
    // The blueprint's columns (`admin_columns`), or the first ones without the id (each row
    // links to its page).
    fields: resource.columns
      ? resource.columns.filter((n) => shown.some((m) => m.name === n && m.readable))
      : shown.filter((m) => m.readable && !m.file && m.type !== 'json' && m.name !== 'id').slice(0, 7).map((m) => m.name),
  };
  remembered.set(resource.key, st);
  const selected = new Set();
  const canDelete = resource.can('delete', admin);
  const canRestore = resource.can('restore', admin);
  const canBatchDelete = resource.can('batchDelete', admin);
  const canCreate = resource.can('create', admin);
  const canSeeDeleted = resource.includeDeleted && (canRestore || admin);

  const tableHolder = h('div', { class: 'table-wrap' });
  const pager = h('div', { class: 'pager' });
  const batchButton = canBatchDelete
    ? h('button', { type: 'button', class: 'danger', id: 'batch-delete', disabled: true, onclick: () => batchDelete() }, 'Delete selected')
    : null;

  // Search over the text members.
  const searchInput = searchable.length && resource.hasFilterExpression
    ? h('input', { id: 'list-search', type: 'search', value: st.search, placeholder: searchable.join(', ') })
    : null;
  // The filter expression.
  const exprInput = resource.hasFilterExpression
    ? h('input', { id: 'list-filter', type: 'text', size: 40, value: st.expression, placeholder: "species = 'cat' and cuteness_level >= 5" })
    : null;
  // Named filters.
  const scopeSelect = resource.scopes.length
    ? h('select', { id: 'list-scope' }, h('option', { value: '' }, 'All'), resource.scopes.map((s) => h('option', { value: s, selected: s === st.scope }, humanScope(s))))
    : null;
  const deletedBox = canSeeDeleted ? h('input', { id: 'list-deleted', type: 'checkbox', checked: st.includeDeleted }) : null;
  const sizeSelect = h('select', { id: 'list-size' }, [10, 25, 50, 100].map((n) => h('option', { value: n, selected: n === st.pageSize }, String(n))));

  // Simple filters: member, operator, value.
  const filterable = shown.filter((m) => resource.filters.has(m.name));
  const fMember = h('select', { id: 'filter-member', 'aria-label': 'Filter member' }, filterable.map((m) => h('option', { value: m.name }, m.label)));
  const fOp = h('select', { id: 'filter-op', 'aria-label': 'Filter operator' });
  const fValue = h('input', { id: 'filter-value', type: 'text', 'aria-label': 'Filter value' });
  const fillOps = () => {
    const ops = resource.filters.get(fMember.value) || [];
    replace(fOp, ops.map((op) => h('option', { value: op }, OPERATORS[op] || op)));
  };
  fMember.addEventListener('change', fillOps);
  fillOps();
  const chips = h('ul', { class: 'filters', 'aria-label': 'Active filters' });
  const drawChips = () => replace(chips, st.filters.map((f, i) => h('li', { class: 'tag' },
    `${f.member} ${OPERATORS[f.op] || f.op} ${f.value} `,
    h('button', { type: 'button', class: 'secondary', 'aria-label': `Remove filter on ${f.member}`, onclick: () => { st.filters.splice(i, 1); drawChips(); st.page = 1; load(); } }, '×'))));
  drawChips();

  // The member chooser (fields=).
  const chooser = resource.chooser.length
    ? h('details', {}, h('summary', {}, 'Columns'),
      h('fieldset', { class: 'members' }, h('legend', {}, 'Members shown'),
        shown.filter((m) => resource.chooser.includes(m.name)).map((m) => {
          const id = freshId('col');
          return h('label', { for: id }, h('input', {
            id, type: 'checkbox', checked: st.fields.includes(m.name), dataset: { member: m.name },
            onchange: (e) => {
              if (e.target.checked) st.fields.push(m.name); else st.fields = st.fields.filter((x) => x !== m.name);
              load();
            },
          }), ` ${m.label}`);
        })))
    : null;

  const apply = (event) => {
    if (event) event.preventDefault();
    st.search = searchInput ? searchInput.value.trim() : '';
    st.expression = exprInput ? exprInput.value.trim() : '';
    st.scope = scopeSelect ? scopeSelect.value : '';
    st.includeDeleted = deletedBox ? deletedBox.checked : false;
    st.pageSize = Number(sizeSelect.value);
    st.page = 1;
    load();
  };

  replace(ctx.view,
    h('h2', {}, resource.label),
    h('form', { class: 'toolbar', role: 'search', 'aria-label': `Find ${resource.label}`, onsubmit: apply },
      searchInput ? h('label', { for: 'list-search' }, 'Search', searchInput) : null,
      exprInput ? h('label', { for: 'list-filter' }, 'Filter expression', exprInput) : null,
      scopeSelect ? h('label', { for: 'list-scope' }, 'Named filter', scopeSelect) : null,
      h('label', { for: 'list-size' }, 'Per page', sizeSelect),
      deletedBox ? h('label', { class: 'check', for: 'list-deleted' }, deletedBox, 'Include deleted') : null,
      h('button', { type: 'submit', id: 'list-apply' }, 'Apply')),
    filterable.length
      ? h('form', { class: 'toolbar', 'aria-label': 'Add a filter', onsubmit: (e) => {
        e.preventDefault();
        if (fValue.value === '') return;
        st.filters.push({ member: fMember.value, op: fOp.value, value: fValue.value });
        fValue.value = '';
        drawChips();
        st.page = 1;
        load();
      } }, fMember, fOp, fValue, h('button', { type: 'submit', id: 'filter-add', class: 'secondary' }, 'Add filter'))
      : null,
    chips,
    chooser,
    chartPanel(resource, () => selection({ sort: false })),
    importForm(resource, () => load()),
    h('div', { class: 'toolbar' },
      canCreate ? h('a', { href: `#/${resource.key}/new`, id: 'create-link' }, `New ${resource.name}`) : null,
      exportButton(resource, () => selection({ sort: true })),
      batchButton),
    tableHolder,
    pager);

  const params = () => {
    const p = { page: st.page, page_size: st.pageSize };
    if (st.sort) p.sort = st.sort;
    const exprs = [];
    if (st.expression) exprs.push(st.expression);
    if (st.search) exprs.push(searchExpression(searchable, st.search));
    if (exprs.length) p.filter = exprs;
    if (st.scope) p.scope = st.scope;
    if (st.includeDeleted) p.include_deleted = 'true';
    for (const f of st.filters) {
      const name = f.op === 'eq' ? f.member : `${f.member}__${f.op}`;
      p[name] = p[name] ? [].concat(p[name], f.value) : f.value;
    }
    if (resource.chooser.length && st.fields.length) {
      const keep = new Set(st.fields);
      keep.add('id');
      if (resource.softDelete && resource.chooser.includes('deleted_at')) keep.add('deleted_at');
      p.fields = [...keep].filter((f) => resource.chooser.includes(f)).join(',');
    }
    return p;
  };

  /** The list's filters (and its sort and columns, with `sort`) without paging: what the chart and the download select. */
  const selection = ({ sort }) => {
    const p = params();
    delete p.page;
    delete p.page_size;
    if (!sort) {
      delete p.sort;
      delete p.fields;
    }
    return p;
  };

  let generation = 0;
  async function load() {
    generation += 1;
    const mine = generation;
    ctx.view.dataset.loading = '1';
    say('Loading…');
    let answer;
    try {
      answer = await api.send('GET', resource.collectionPath(), { params: params() });
    } catch (e) {
      if (mine !== generation) return;
      delete ctx.view.dataset.loading;
      say(e.message, 'error');
      replace(tableHolder, h('p', { class: 'error', role: 'alert', id: 'list-error' }, e.message));
      return;
    }
    if (mine !== generation) return;
    const arrived = performance.now();
    render(answer.body);
    say(`${answer.body.data.length} shown`);
    // Time from the answer to the first frame with the rows in it (reported by the tests).
    requestAnimationFrame(() => setTimeout(() => {
      if (mine !== generation) return;
      ctx.view.dataset.renderMs = (performance.now() - arrived).toFixed(1);
      ctx.view.dataset.rows = String(answer.body.data.length);
      delete ctx.view.dataset.loading;
    }, 0));
  }

  function render(page) {
    // A reload (paging, the live feed) keeps the selection of the rows still shown.
    const ids = new Set(page.data.map((row) => row.id));
    for (const id of [...selected]) if (!ids.has(id)) selected.delete(id);
    if (batchButton) batchButton.disabled = selected.size === 0;
    const columns = shown.filter((m) => m.readable && (!resource.chooser.length || st.fields.includes(m.name)));
    if (resource.columns) columns.sort((a, b) => st.fields.indexOf(a.name) - st.fields.indexOf(b.name));
    const sortState = (name) => {
      if (st.sort === name) return 'ascending';
      if (st.sort === `-${name}`) return 'descending';
      return 'none';
    };
    const head = h('tr', {},
      canBatchDelete ? h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Select')) : null,
      columns.map((m) => h('th', { scope: 'col', dataset: { member: m.name }, 'aria-sort': resource.sortable.includes(m.name) ? sortState(m.name) : null },
        resource.sortable.includes(m.name)
          ? h('button', { type: 'button', dataset: { sort: m.name }, onclick: () => {
            st.sort = st.sort === m.name ? `-${m.name}` : m.name;
            st.page = 1;
            load();
          } }, m.label, sortState(m.name) === 'ascending' ? ' ▲' : sortState(m.name) === 'descending' ? ' ▼' : '')
          : m.label)),
      h('th', { scope: 'col' }, 'Actions'));
    const rows = page.data.map((row) => rowElement(row, columns));
    replace(tableHolder, h('table', { id: 'list', 'aria-label': resource.label },
      h('thead', {}, head), h('tbody', {}, rows)));
    const p = page.pagination || {};
    const total = p.total_pages === null || p.total_pages === undefined ? '?' : p.total_pages;
    replace(pager,
      h('button', { type: 'button', class: 'secondary', id: 'page-prev', disabled: st.page <= 1, onclick: () => { st.page -= 1; load(); } }, 'Previous'),
      h('span', { id: 'page-info' }, `Page ${p.page || st.page} of ${total} (${p.total === null || p.total === undefined ? '?' : p.total} items)`),
      h('button', { type: 'button', class: 'secondary', id: 'page-next', disabled: !(typeof p.total_pages === 'number' ? st.page < p.total_pages : Boolean(p.next_cursor)), onclick: () => { st.page += 1; load(); } }, 'Next'));
  }

  function rowElement(row, columns) {
    const deleted = Boolean(row.deleted_at || row.is_deleted);
    const label = row.name || row.email || row.id;
    const actions = h('div', { class: 'row-actions' },
      h('a', { href: `#/${resource.key}/${encodeURIComponent(row.id)}`, 'aria-label': `Open ${label}` }, 'Open'));
    if (deleted && canRestore) {
      actions.append(h('button', { type: 'button', class: 'secondary', dataset: { action: 'restore' }, onclick: () => restore(row) }, 'Restore'));
    } else if (!deleted && canDelete && resource.canRow('delete', admin, row, ctx.me)) {
      actions.append(confirmButton('Delete', `Delete ${label}`, () => remove(row)));
    }
    return h('tr', { class: deleted ? 'deleted' : null, dataset: { id: row.id } },
      canBatchDelete ? h('td', {}, deleted ? null : h('input', {
        type: 'checkbox', 'aria-label': `Select ${label}`, checked: selected.has(row.id),
        onchange: (e) => {
          if (e.target.checked) selected.add(row.id); else selected.delete(row.id);
          batchButton.disabled = selected.size === 0;
        },
      })) : null,
      columns.map((m) => h('td', { dataset: { member: m.name } }, cell(row[m.name], m))),
      h('td', {}, actions));
  }

  async function remove(row) {
    try {
      await api.send('DELETE', resource.itemPath('delete', row.id));
      say(`Deleted ${row.name || row.id}.`, 'ok');
      load();
    } catch (e) {
      say(e.message, 'error');
    }
  }

  async function restore(row) {
    try {
      await api.send('POST', resource.itemPath('restore', row.id));
      say(`Restored ${row.name || row.id}.`, 'ok');
      load();
    } catch (e) {
      say(e.message, 'error');
    }
  }

  async function batchDelete() {
    const items = [...selected].map((id) => ({ id }));
    if (!items.length) return;
    try {
      await api.send('POST', resource.ops.batchDelete.path, { body: { items } });
      selected.clear();
      say(`Deleted ${items.length} items.`, 'ok');
      load();
    } catch (e) {
      say(e.message, 'error');
    }
  }

  load();
  follow(ctx, resource, () => load());
}

/** A named filter's label: `due_today` -> `Due today`. */
function humanScope(s) {
  const t = s.replace(/_/g, ' ');
  return t.charAt(0).toUpperCase() + t.slice(1);
}

/** What a cell shows: text, a file's name, `yes`/`no` for booleans. */
export function cell(value, m) {
  if (m && m.file && value && typeof value === 'object') return value.name || value.id;
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return text(value);
}

/** A button that asks for a second click before `action` (no browser dialog). */
export function confirmButton(label, accessible, action) {
  let armed = false;
  const b = h('button', { type: 'button', class: 'danger', 'aria-label': accessible, dataset: { action: label.toLowerCase() } }, label);
  b.addEventListener('click', () => {
    if (!armed) {
      armed = true;
      b.textContent = `Confirm ${label.toLowerCase()}`;
      b.setAttribute('aria-label', `Confirm: ${accessible}`);
      return;
    }
    armed = false;
    b.textContent = label;
    b.setAttribute('aria-label', accessible);
    action();
  });
  return b;
}
