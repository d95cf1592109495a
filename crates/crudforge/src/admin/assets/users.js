// Users, roles and sessions, on a user's page: enable and disable the account, grant and
// revoke roles (the nested role resource), end sessions. Every action is an ordinary request
// to the user endpoints, so the API's guards (who may grant what, to whom) decide; the page
// offers only what the description marks as open to the caller.

import * as api from './api.js';
import { h, replace, say, text, freshId } from './dom.js';

const KNOWN_ROLES = ['SUPERADMIN', 'ADMIN', 'USER'];

/** The panel of account actions and roles for the user `row`. */
export function userPanel(ctx, users, row, reload) {
  const panel = h('section', { 'aria-labelledby': 'account-title', id: 'account' }, h('h3', { id: 'account-title' }, 'Account, roles and sessions'));
  const enabled = users.members.find((m) => m.name === 'is_enabled');
  const mayToggle = enabled && enabled.updatable && (ctx.admin || !enabled.adminOnly) && users.can('update', ctx.admin);
  const self = ctx.me && ctx.me.id === row.id;
  const setEnabled = async (value) => api.send('PATCH', users.itemPath('update', row.id), { body: { is_enabled: value } });
  const actions = h('div', { class: 'toolbar' });
  if (mayToggle && typeof row.is_enabled === 'boolean' && !self) {
    actions.append(h('button', {
      type: 'button', id: row.is_enabled ? 'user-disable' : 'user-enable', class: row.is_enabled ? 'danger' : null,
      onclick: async () => {
        try {
          await setEnabled(!row.is_enabled);
          say(row.is_enabled ? 'Disabled: the account cannot sign in and its sessions ended.' : 'Enabled.', 'ok');
          reload();
        } catch (e) { say(e.message, 'error'); }
      },
    }, row.is_enabled ? 'Disable account' : 'Enable account'));
  }
  if (self && ctx.model.auth.logout) {
    actions.append(h('button', { type: 'button', id: 'end-my-sessions', class: 'secondary', onclick: async () => {
      try {
        await api.send('POST', ctx.model.auth.logout, { body: { all: true } });
      } finally {
        await api.logout().catch(() => null);
      }
    } }, 'End all my sessions'));
  } else if (mayToggle && row.is_enabled === true) {
    // Disabling ends every session of the user (its credential version rises); enabling again
    // does not bring them back.
    actions.append(h('button', { type: 'button', id: 'end-sessions', class: 'secondary', onclick: async () => {
      try {
        await setEnabled(false);
        await setEnabled(true);
        say('Every session of the user ended.', 'ok');
      } catch (e) { say(e.message, 'error'); }
    } }, 'End sessions'));
  }
  panel.append(actions);
  const roles = users.children.find((c) => /Role$/.test(c.name));
  if (roles && roles.can('list', ctx.admin)) panel.append(rolesBox(ctx, roles, row));
  return panel;
}

/** The roles of one user: a table with revoke buttons, and a form to grant one. */
function rolesBox(ctx, roles, user) {
  const box = h('div', { id: 'roles' });
  const table = h('div', { class: 'table-wrap' });
  const domains = ctx.model.resources.find((r) => r.name === 'Domain' || r.key === 'domains');
  const load = async () => {
    try {
      const a = await api.send('GET', roles.collectionPath(user.id), { params: { page_size: 100 } });
      replace(table, h('table', { id: 'roles-table', 'aria-label': 'Roles' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Role'), h('th', { scope: 'col' }, 'Domain'), h('th', { scope: 'col' }, 'Actions'))),
        h('tbody', {}, a.body.data.map((r) => h('tr', { dataset: { role: r.role } },
          h('td', {}, text(r.role)),
          h('td', {}, r.domain_id ? text(r.domain_id) : 'every domain'),
          h('td', {}, roles.can('delete', ctx.admin) ? h('button', { type: 'button', class: 'danger', 'aria-label': `Revoke ${r.role}`, onclick: async () => {
            try {
              await api.send('DELETE', roles.itemPath('delete', r.id, user.id));
              say(`Revoked ${r.role}.`, 'ok');
              load();
            } catch (e) { say(e.message, 'error'); }
          } }, 'Revoke') : null))))));
    } catch (e) {
      replace(table, h('p', { class: 'error' }, e.message));
    }
  };
  box.append(h('h3', {}, 'Roles'), table);
  if (roles.can('create', ctx.admin)) {
    const roleId = freshId('grant-role');
    const domainId = freshId('grant-domain');
    const choices = h('datalist', { id: `${roleId}-choices` }, KNOWN_ROLES.map((r) => h('option', { value: r })));
    const role = h('input', { id: roleId, type: 'text', list: choices.id, required: true, autocomplete: 'off' });
    const domain = h('select', { id: domainId }, h('option', { value: '' }, 'Every domain'));
    if (domains && domains.can('list', ctx.admin)) {
      api.send('GET', domains.collectionPath(), { params: { page_size: 100 } })
        .then((a) => a.body.data.forEach((d) => domain.append(h('option', { value: d.id }, text(d.name || d.id)))))
        .catch(() => null);
    }
    const error = h('p', { class: 'field-error', role: 'alert', id: 'grant-error' });
    box.append(h('form', { class: 'toolbar', id: 'grant-form', 'aria-label': 'Grant a role', onsubmit: async (e) => {
      e.preventDefault();
      error.textContent = '';
      const body = { role: role.value.trim() };
      if (domain.value) body.domain_id = domain.value;
      try {
        await api.send('POST', roles.collectionPath(user.id), { body });
        say(`Granted ${body.role}.`, 'ok');
        role.value = '';
        load();
      } catch (err) {
        error.textContent = err.message;
      }
    } },
    h('label', { for: roleId }, 'Role', role), choices,
    h('label', { for: domainId }, 'Domain', domain),
    h('button', { type: 'submit', id: 'grant-submit' }, 'Grant role'), error));
  }
  load();
  return box;
}
