// The admin page's entry: reads the OpenAPI description, shows the sign-in form, then the
// navigation of resources and the view the location's hash names (#/<resource>,
// #/<resource>/<id>, #/<resource>/new; a user's page also manages its roles and sessions;
// #/@jobs, the jobs and schedules, for administrators when the API has its jobs API;
// #/@keys, the API keys, when the API mounts the Token resource).

import * as api from './api.js';
import { readDescription, adminStatus } from './schema.js';
import { h, replace, say } from './dom.js';
import { listView } from './list.js';
import { recordView, createView } from './form.js';
import { jobsView, JOBS_KEY } from './jobs.js';
import { providerButtons, finishProviderSignIn } from './providers.js';
import { keysView, KEYS_KEY } from './keys.js';

const root = document.getElementById('app');
const state = { model: null, me: null, admin: false };

async function start() {
  let description;
  try {
    const answer = await api.send('GET', '/openapi.json', { anonymous: true });
    description = answer.body;
  } catch (e) {
    replace(root, h('main', { id: 'main' }, h('h1', {}, 'Admin'), h('p', { class: 'error' }, `The API description could not be read: ${e.message}`)));
    return;
  }
  state.model = readDescription(description);
  api.configure(state.model.auth);
  api.onSignOut(() => { state.me = null; signIn(); });
  window.addEventListener('hashchange', () => { if (state.me) route(); });
  // Back from a sign-in provider (`code` or `error` in the query): finish signing in.
  try {
    if (await finishProviderSignIn(state.model.auth.providers)) {
      await loadMe();
      layout();
      route();
      return;
    }
  } catch (e) {
    signIn(e.message);
    return;
  }
  signIn();
}

function signIn(message) {
  const email = h('input', { id: 'signin-email', type: 'email', autocomplete: 'username', required: true });
  const password = h('input', { id: 'signin-password', type: 'password', autocomplete: 'current-password', required: true });
  const error = h('p', { class: 'error', role: 'alert', id: 'signin-error' }, message || '');
  const withDomain = state.model.auth.domain;
  const domain = withDomain ? h('input', { id: 'signin-domain', type: 'text', autocomplete: 'organization' }) : null;
  const form = h('form', {
    class: 'signin',
    'aria-labelledby': 'signin-title',
    onsubmit: async (event) => {
      event.preventDefault();
      error.textContent = '';
      try {
        await api.login(email.value, password.value, domain ? domain.value : undefined);
        password.value = '';
        await loadMe();
        layout();
        route();
      } catch (e) {
        error.textContent = e.message;
      }
    },
  },
  h('h1', { id: 'signin-title' }, `${state.model.title}: sign in`),
  h('label', { for: 'signin-email' }, 'E-mail'), email,
  h('label', { for: 'signin-password' }, 'Password'), password,
  domain ? [h('label', { for: 'signin-domain' }, 'Domain (optional)'), domain] : null,
  h('button', { type: 'submit' }, 'Sign in'),
  providerButtons(state.model.auth.providers, error),
  error);
  replace(root, h('main', { id: 'main' }, form));
  email.focus();
}

async function loadMe() {
  const answer = await api.send('GET', state.model.auth.me);
  state.me = answer.body;
  state.admin = await adminStatus(state.model, state.me, api.send);
}

/** The header, the navigation and the main area. */
function layout() {
  const items = state.model.resources
    .filter((r) => r.ops.list && r.visible(state.admin) && !r.isKeys)
    .map((r) => h('li', {}, h('a', { href: `#/${r.key}`, dataset: { key: r.key } }, r.label)));
  if (keysShown()) items.push(h('li', { class: 'nav-keys' }, h('a', { href: `#/${KEYS_KEY}`, dataset: { key: KEYS_KEY } }, 'API keys')));
  if (jobsShown()) items.push(h('li', { class: 'nav-jobs' }, h('a', { href: `#/${JOBS_KEY}`, dataset: { key: JOBS_KEY } }, 'Jobs')));
  const who = state.me && (state.me.email || state.me.display_name || state.me.id);
  replace(root, h('div', { class: 'layout' },
    h('header', {},
      h('h1', {}, `${state.model.title} admin`),
      h('span', { id: 'who' }, `${who}${state.admin ? ' (administrator)' : ''}`),
      h('button', { type: 'button', id: 'signout', onclick: () => api.logout() }, 'Sign out')),
    h('nav', { 'aria-label': 'Resources' }, h('ul', {}, items)),
    h('main', { id: 'main' }, h('p', { id: 'status', role: 'status', 'aria-live': 'polite' }), h('div', { id: 'view' }))));
}

/** Whether the API keys view is offered: the description has the Token resource, whose list the caller may read. */
function keysShown() {
  return Boolean(state.model.keys && state.model.keys.can('list', state.admin));
}

/** Whether the Jobs view is offered: the description has `listJobs`, for administrators. */
function jobsShown() {
  return Boolean(state.model.jobs && state.admin);
}

function route() {
  const parts = (location.hash.replace(/^#\/?/, '') || '').split('/').filter(Boolean).map(decodeURIComponent);
  const view = document.getElementById('view');
  if (!view) return;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.key === parts[0]) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  say('');
  const ctx = { model: state.model, me: state.me, admin: state.admin, view };
  if (parts[0] === JOBS_KEY && jobsShown()) {
    jobsView(ctx, state.model.jobs);
    return;
  }
  if (parts[0] === KEYS_KEY && keysShown()) {
    keysView(ctx, state.model.keys);
    return;
  }
  const resource = state.model.resources.find((r) => r.key === parts[0]);
  if (!resource) {
    const first = state.model.resources.find((r) => r.ops.list && r.visible(state.admin));
    replace(view, h('h2', {}, 'Welcome'), h('p', {}, first ? 'Choose a resource on the left.' : 'You may not list any resource.'));
    return;
  }
  if (parts[1] === 'new') createView(ctx, resource);
  else if (parts[1]) recordView(ctx, resource, parts[1]);
  else listView(ctx, resource);
}

start();
