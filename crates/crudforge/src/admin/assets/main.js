// The admin page's entry: reads the OpenAPI description, shows the sign-in form (and, when the
// sign-in asks for it, a second factor's step or the enrollment of one), then the navigation
// of resources and the view the location's hash names (#/<resource>,
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
      await enter();
      return;
    }
  } catch (e) {
    if (!nextStep(e)) signIn(e.message);
    return;
  }
  signIn();
}

/** Signed in: reads who it is, then shows the navigation and the view the address names. */
async function enter() {
  await loadMe();
  layout();
  route();
}

/** Shows `node` as the page's one content (a step of signing in), then focuses `focus`. */
function show(node, focus) {
  replace(root, h('main', { id: 'main' }, node));
  focus.focus();
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
        await enter();
      } catch (e) {
        if (!nextStep(e)) error.textContent = e.message;
      }
    },
  },
  h('h1', { id: 'signin-title' }, `${state.model.title}: sign in`),
  h('label', { for: 'signin-email' }, 'E-mail'), email,
  h('label', { for: 'signin-password' }, 'Password'), password,
  domain ? [h('label', { for: 'signin-domain' }, 'Domain (optional)'), domain] : null,
  h('button', { type: 'submit' }, 'Sign in'),
  api.passkeys()
    ? h('div', { class: 'signin-more' }, h('button', { type: 'button', class: 'secondary', id: 'signin-passkey', onclick: () => withPasskey(null, error) }, 'Sign in with a passkey'))
    : null,
  providerButtons(state.model.auth.providers, error),
  error);
  show(form, email);
}

/**
 * Shows the step a refused sign-in (password or provider) asks for, when it is one the API
 * offers here: a second factor, or enrolling one. False when `e` asks for none.
 */
function nextStep(e) {
  const challenge = api.challengeOf(e);
  if (!challenge) return false;
  if (challenge.kind === 'second_factor') factorStep(challenge, false);
  else enrollStep(challenge);
  return true;
}

/**
 * The second step of a sign-in: a code of the authenticator app, or with `recovery` one of the
 * recovery codes, sent with the challenge's ticket. A refusal shows the problem's detail, and
 * the same ticket serves the next try (until it expires: then back to the first step).
 */
function factorStep(challenge, recovery) {
  const input = h('input', recovery
    ? { id: 'factor-code', type: 'text', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'factor-help' }
    : { id: 'factor-code', type: 'text', inputmode: 'numeric', autocomplete: 'one-time-code', required: true, 'aria-describedby': 'factor-help' });
  const submit = h('button', { type: 'submit', id: 'factor-submit' }, 'Verify');
  const error = h('p', { class: 'error', role: 'alert', id: 'factor-error' });
  const other = (challenge.factors || []).includes('recovery_code')
    ? h('button', { type: 'button', class: 'secondary', id: 'factor-switch', onclick: () => factorStep(challenge, !recovery) },
      recovery ? 'Use a code of the app instead' : 'Use a recovery code instead')
    : null;
  const passkey = (challenge.factors || []).includes('passkey') && api.passkeys()
    ? h('button', { type: 'button', class: 'secondary', id: 'factor-passkey', onclick: () => withPasskey(challenge.ticket, error) }, 'Use a passkey')
    : null;
  const form = h('form', {
    class: 'signin',
    id: 'factor-form',
    'aria-labelledby': 'factor-title',
    onsubmit: async (event) => {
      event.preventDefault();
      error.textContent = '';
      submit.disabled = true;
      const value = input.value.trim();
      try {
        await api.verifySecondFactor(challenge.ticket, recovery ? { recovery_code: value } : { code: value.replace(/\s+/g, '') });
        await enter();
      } catch (e) {
        error.textContent = e.message;
        submit.disabled = false;
        input.value = '';
        input.focus();
      }
    },
  },
  h('h1', { id: 'factor-title' }, `${state.model.title}: second factor`),
  h('p', { id: 'factor-help' }, recovery
    ? 'Enter one of the recovery codes you were given; each works once.'
    : 'Enter the 6-digit code your authenticator app shows now.'),
  h('label', { for: 'factor-code' }, recovery ? 'Recovery code' : 'Code'), input,
  submit,
  h('div', { class: 'signin-more' }, passkey, other, h('button', { type: 'button', class: 'secondary', id: 'factor-back', onclick: () => signIn() }, 'Back to sign-in')),
  error);
  show(form, input);
}

/**
 * A sign-in with a passkey (after a password with the challenge's `ticket`, or alone): the
 * browser asks for one, then the page enters; a refusal or a cancelled prompt shows in `error`.
 */
async function withPasskey(ticket, error) {
  error.textContent = '';
  try {
    await api.signInWithPasskey(ticket);
    await enter();
  } catch (e) {
    if (ticket || !nextStep(e)) error.textContent = e.message;
  }
}

/**
 * The sign-in of an account that must first add a second factor: an authenticator app enrolled
 * with the challenge's ticket, its key and otpauth address shown as text for the app, then
 * confirmed with a first code, which signs in (and shows the recovery codes, when new).
 */
async function enrollStep(challenge) {
  const error = h('p', { class: 'error', role: 'alert', id: 'enroll-error' });
  const back = h('button', { type: 'button', class: 'secondary', id: 'enroll-back', onclick: () => signIn() }, 'Back to sign-in');
  const title = h('h1', { id: 'enroll-title' }, `${state.model.title}: add a second factor`);
  const intro = h('p', {}, 'This account must have a second factor before it signs in: an authenticator app on your phone or computer.');
  const waiting = h('p', { role: 'status' }, 'Preparing a key for the app…');
  show(h('section', { class: 'signin', 'aria-labelledby': 'enroll-title' }, title, intro, waiting, back, error), back);
  let factor;
  try {
    factor = await api.enrollTotp(challenge.ticket);
  } catch (e) {
    waiting.textContent = '';
    error.textContent = e.message;
    return;
  }
  const input = h('input', { id: 'enroll-code', type: 'text', inputmode: 'numeric', autocomplete: 'one-time-code', required: true, 'aria-describedby': 'enroll-code-help' });
  const submit = h('button', { type: 'submit', id: 'enroll-submit' }, 'Confirm and sign in');
  const form = h('form', {
    class: 'signin',
    id: 'enroll-form',
    'aria-labelledby': 'enroll-title',
    onsubmit: async (event) => {
      event.preventDefault();
      error.textContent = '';
      submit.disabled = true;
      try {
        const codes = await api.confirmFactor(factor.id, input.value.replace(/\s+/g, ''), challenge.ticket);
        if (codes.length) recoveryStep(codes);
        else await enter();
      } catch (e) {
        error.textContent = e.message;
        submit.disabled = false;
        input.value = '';
        input.focus();
      }
    },
  },
  title, intro,
  h('p', {}, 'Add an account to the app by typing this key into it (the spaces are only there to read it), or give it the otpauth address:'),
  h('dl', { class: 'enroll-key' },
    h('dt', {}, 'Key'), h('dd', {}, h('code', { id: 'enroll-secret' }, factor.secret.replace(/(.{4})(?=.)/g, '$1 '))),
    h('dt', {}, 'otpauth address'), h('dd', {}, h('code', { id: 'enroll-url' }, factor.otpauth_url))),
  h('label', { for: 'enroll-code' }, 'Code'), input,
  h('p', { class: 'field-help', id: 'enroll-code-help' }, 'The 6-digit code the app then shows.'),
  submit,
  h('div', { class: 'signin-more' }, back),
  error);
  show(form, input);
}

/** Shows the new recovery codes, once, and a button that goes on to the signed-in page. */
function recoveryStep(codes) {
  const title = h('h1', { id: 'recovery-title', tabindex: '-1' }, `${state.model.title}: your recovery codes`);
  const go = h('button', { type: 'button', id: 'recovery-continue', onclick: () => enter().catch((e) => signIn(e.message)) }, 'Continue');
  show(h('section', { class: 'signin', id: 'recovery', 'aria-labelledby': 'recovery-title' },
    title,
    h('p', {}, 'The second factor is set up. If you lose the app, each of these codes signs in once in place of its code. Keep them somewhere safe now: they are not shown again.'),
    h('ul', { class: 'recovery-codes', id: 'recovery-codes' }, codes.map((c) => h('li', {}, h('code', {}, c)))),
    go), title);
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
