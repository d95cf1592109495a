// The API keys view, when the API mounts the Token resource with its `scopes` member: the
// signed-in user's keys (and, for an administrator, everyone's), a form that creates one and
// Revoke. The key's secret is made here from the browser's random source (32 bytes, 43
// characters of base64url), sent once to `POST` on the Token resource, which keeps only its
// digest, and shown once with a copy button. Scopes and expiry are chosen in the form. Every
// action is an ordinary request to the Token resource's operations, so the API decides (a key
// is always its creator's; administrators list and revoke everyone's).

import * as api from './api.js';
import { h, replace, say, text, freshId } from './dom.js';
import { confirmButton } from './list.js';

/** The route of the view (no resource's key begins with `@`). */
export const KEYS_KEY = '@keys';

/** The operations a scope names after a resource (`Critter:read`). */
const OPERATIONS = ['read', 'create', 'update', 'delete'];

/** The expiries offered, in days (empty: never). */
const EXPIRIES = [['', 'Never'], ['1', 'In 1 day'], ['7', 'In 7 days'], ['30', 'In 30 days'], ['90', 'In 90 days'], ['365', 'In 1 year']];

/** What the view was showing, so that coming back keeps it. */
const st = { whose: 'mine' };

/** A new secret: 32 random bytes as base64url, 43 characters. */
function newSecret() {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** A time as the page shows it (local, to the minute), or `—`. */
function when(value) {
  if (!value) return '—';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? text(value) : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** `active`, `revoked` or `expired`. */
function stateOf(key) {
  if (key.revoked) return 'revoked';
  if (key.expires_at && new Date(key.expires_at).getTime() <= Date.now()) return 'expired';
  return 'active';
}

/** The resources a scope may name: every resource of the description, once each, by name. */
function scopeResources(model) {
  const seen = new Map();
  for (const r of model.all) {
    const secret = Boolean(r.isUsers || r.isKeys || r.members.some((m) => m.writeOnly && /password/.test(m.name)));
    if (!seen.has(r.name)) seen.set(r.name, { name: r.name, label: r.label, secret });
    else if (secret) seen.get(r.name).secret = true;
  }
  return [...seen.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** Shows the API keys view in `ctx.view`; `keys` is the Token resource (`ctx.model.keys`). */
export function keysView(ctx, keys) {
  if (!ctx.admin) st.whose = 'mine';
  const tableHolder = h('div', { class: 'table-wrap', id: 'keys-table-wrap' });
  const secretHolder = h('div', { id: 'key-secret-panel' });
  const whoseId = 'keys-show';
  const whose = ctx.admin
    ? h('select', { id: whoseId },
      h('option', { value: 'mine', selected: st.whose === 'mine' }, 'My keys'),
      h('option', { value: 'all', selected: st.whose === 'all' }, "Everyone's keys"))
    : null;

  const revoke = async (key) => {
    try {
      await api.send('PATCH', keys.itemPath('update', key.id), { body: { revoked: true, revoked_at: new Date().toISOString() } });
      say(`Revoked the key ${key.description || key.id}: it cannot be exchanged any more.`, 'ok');
      load();
    } catch (e) { say(e.message, 'error'); }
  };

  const row = (key) => {
    const state = stateOf(key);
    const label = key.description || key.id;
    const mayRevoke = state !== 'revoked' && keys.canRow('update', ctx.admin, key, ctx.me);
    return h('tr', { dataset: { id: String(key.id), state, description: key.description || '' } },
      h('td', {}, text(key.description)),
      st.whose === 'all' ? h('td', { class: 'key-owner' }, key.user_id === (ctx.me && ctx.me.id) ? 'me' : text(key.user_id)) : null,
      h('td', { class: 'key-scopes' }, key.scopes ? text(key.scopes) : 'full access'),
      h('td', {}, when(key.created_at)),
      h('td', {}, when(key.expires_at)),
      h('td', { class: 'key-last-used' }, when(key.last_used_at)),
      h('td', {}, h('span', { class: `tag state-${state}` }, state)),
      h('td', {}, mayRevoke ? confirmButton('Revoke', `Revoke the key ${label}`, () => revoke(key)) : null));
  };

  const load = async () => {
    const params = { page_size: 100 };
    if (keys.filters.has('kind')) params.kind = 'api_key';
    if (keys.sortable.includes('created_at')) params.sort = '-created_at';
    if (st.whose !== 'all' && ctx.me && ctx.me.id && keys.filters.has('user_id')) params.user_id = ctx.me.id;
    try {
      const a = await api.send('GET', keys.collectionPath(), { params });
      const items = ((a.body && a.body.data) || []).filter((k) => !k.kind || k.kind === 'api_key');
      const heads = ['Description', st.whose === 'all' ? 'Owner' : null, 'Scopes', 'Created', 'Expires', 'Last used', 'State', 'Actions'].filter(Boolean);
      replace(tableHolder, items.length
        ? h('table', { id: 'keys-table', 'aria-label': 'API keys' },
          h('thead', {}, h('tr', {}, heads.map((c) => h('th', { scope: 'col' }, c)))),
          h('tbody', {}, items.map(row)))
        : h('p', { id: 'keys-empty' }, 'No API key.'));
    } catch (e) {
      replace(tableHolder, h('p', { class: 'error', role: 'alert' }, e.message));
    }
  };

  if (whose) whose.addEventListener('change', () => { st.whose = whose.value; load(); });

  replace(ctx.view,
    h('h2', {}, 'API keys'),
    h('p', { class: 'field-help' }, 'A key is exchanged for an access token of its owner (the application\'s token login). Its scopes narrow what that token may do; they never add to its owner\'s rights.'),
    whose ? h('div', { class: 'toolbar' }, h('label', { for: whoseId }, 'Show', whose)) : null,
    tableHolder,
    keys.can('create', ctx.admin) ? createForm(ctx, keys, secretHolder, load) : null,
    secretHolder);
  load();
}

/** The form that creates a key; `shown` receives the secret once it is stored. */
function createForm(ctx, keys, shown, done) {
  const descriptionId = freshId('key-description');
  const expiryId = freshId('key-expiry');
  const description = h('input', { id: 'key-description', type: 'text', maxlength: 255, autocomplete: 'off', 'aria-describedby': `${descriptionId}-help` });
  const expiry = h('select', { id: 'key-expiry', 'aria-describedby': `${expiryId}-help` }, EXPIRIES.map(([v, l]) => h('option', { value: v }, l)));
  const access = (value, label, checked) => {
    const id = freshId(`key-access-${value}`);
    return h('label', { for: id, class: 'check' },
      h('input', { id, type: 'radio', name: 'key-access', value, checked }), ` ${label}`);
  };
  const resources = scopeResources(ctx.model);
  const grid = h('fieldset', { id: 'key-scopes', disabled: true },
    h('legend', {}, 'Resources and operations'),
    h('table', { class: 'key-scopes-grid', 'aria-label': 'Scopes by resource and operation' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Resource'), OPERATIONS.map((op) => h('th', { scope: 'col' }, op)))),
      h('tbody', {}, resources.map((r) => h('tr', { dataset: { resource: r.name } },
        h('th', { scope: 'row' }, r.name),
        OPERATIONS.map((op) => {
          const blocked = r.secret && op !== 'read';
          return h('td', {}, h('input', {
            type: 'checkbox', dataset: { scope: `${r.name}:${op}` }, 'aria-label': `${r.name}: ${op}`,
            disabled: blocked, title: blocked ? 'A key limited to scopes never writes accounts or keys.' : null,
          }));
        }))))));
  const error = h('p', { class: 'field-error', role: 'alert', id: 'key-error' });
  const form = h('form', { id: 'key-form', class: 'key-form', 'aria-labelledby': 'key-form-title' },
    h('h3', { id: 'key-form-title' }, 'New key'),
    h('div', { class: 'toolbar' },
      h('label', { for: 'key-description' }, 'Description', description),
      h('label', { for: 'key-expiry' }, 'Expires', expiry)),
    h('p', { class: 'field-help', id: `${descriptionId}-help` }, 'What the key is for, so that you recognize it later.'),
    h('p', { class: 'field-help', id: `${expiryId}-help` }, 'An access token exchanged for the key never outlives it.'),
    h('fieldset', { id: 'key-access' }, h('legend', {}, 'Access'),
      access('full', 'Everything its owner may do', true),
      access('read', 'Read only, every resource', false),
      access('chosen', 'Chosen resources and operations', false)),
    grid,
    h('button', { type: 'submit', id: 'key-create' }, 'Create key'),
    error);
  form.addEventListener('change', (event) => {
    if (event.target.name === 'key-access') grid.disabled = event.target.value !== 'chosen';
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    const chosen = form.querySelector('input[name="key-access"]:checked').value;
    let scopes = null;
    if (chosen === 'read') scopes = 'read';
    if (chosen === 'chosen') {
      const entries = [];
      for (const tr of grid.querySelectorAll('tbody tr')) {
        const ticked = [...tr.querySelectorAll('input:checked')].map((i) => i.dataset.scope);
        if (ticked.length === OPERATIONS.length) entries.push(tr.dataset.resource);
        else entries.push(...ticked);
      }
      if (!entries.length) {
        error.textContent = 'Choose at least one operation, or another access.';
        return;
      }
      scopes = entries.join(' ');
    }
    const secret = newSecret();
    const body = { token: secret };
    if (description.value.trim()) body.description = description.value.trim();
    if (expiry.value) body.expires_at = new Date(Date.now() + Number(expiry.value) * 86400000).toISOString();
    if (scopes) body.scopes = scopes;
    const button = form.querySelector('#key-create');
    button.disabled = true;
    try {
      await api.send('POST', keys.collectionPath(), { body });
      showSecret(shown, secret, body.description);
      description.value = '';
      say('Key created. Copy it now: it is shown only once.', 'ok');
      done();
    } catch (e) {
      error.textContent = (e.details || [[null, e.message]]).map(([member, detail]) => (member ? `${member}: ${detail}` : detail)).join(' ');
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

/** Shows a new key's secret once, with a copy button. */
function showSecret(holder, secret, description) {
  const valueId = 'key-secret-value';
  const copied = h('span', { id: 'key-copied', 'aria-live': 'polite' });
  const value = h('input', { id: valueId, type: 'text', readonly: true, value: secret, size: 48, spellcheck: 'false', autocomplete: 'off', 'aria-describedby': 'key-secret-help' });
  replace(holder, h('section', { class: 'key-secret', 'aria-labelledby': 'key-secret-title' },
    h('h3', { id: 'key-secret-title' }, `Your new key${description ? `: ${description}` : ''}`),
    h('p', { id: 'key-secret-help' }, 'Copy it now and keep it somewhere safe: it is shown only this once, and the server keeps only a digest of it.'),
    h('div', { class: 'toolbar' },
      h('label', { for: valueId }, 'Key', value),
      h('button', { type: 'button', class: 'secondary', id: 'key-copy', onclick: async () => {
        value.focus();
        value.select();
        try {
          await navigator.clipboard.writeText(secret);
          copied.textContent = 'Copied.';
        } catch {
          copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
        }
      } }, 'Copy'),
      copied),
    h('button', { type: 'button', class: 'secondary', id: 'key-secret-done', onclick: () => replace(holder) }, 'Done: hide the key')));
  value.focus();
  value.select();
}
