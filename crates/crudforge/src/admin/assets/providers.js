// Signing in through a sign-in provider (the API's feature `providers`): one "Sign in with
// <name>" button per provider the description has beside the user blueprint the page signs in
// with. A click starts the sign-in (`start/`, with the page's own address as `return_to`),
// keeps the ticket it answers in the tab's session storage, the one thing the page keeps there
// (never a token), and goes to the provider. The provider sends the browser back to the page
// with `code` and `state`; the page then finishes the sign-in (`callback/`) and keeps the
// tokens as a password login does, in memory (api.js).

import * as api from './api.js';
import { h } from './dom.js';

/** The session-storage key of a sign-in under way: `{provider, ticket, hash}`. */
const KEPT = 'crudforge-admin.provider-sign-in';

/**
 * The group of "Sign in with <name>" buttons for `providers` (`[{name, start, callback}]`),
 * or null when there is none; a sign-in that cannot start says why in `error`.
 */
export function providerButtons(providers, error) {
  if (!providers || !providers.length) return null;
  const buttons = providers.map((p) => h('button', {
    type: 'button',
    class: 'secondary',
    dataset: { provider: p.name },
    onclick: () => begin(p, buttons, error),
  }, `Sign in with ${p.name}`));
  return h('div', { class: 'signin-providers', role: 'group', 'aria-labelledby': 'signin-providers-label' },
    h('p', { id: 'signin-providers-label' }, 'Or sign in with'),
    buttons);
}

/** Starts a sign-in with `provider`: its ticket kept, then off to the provider's page. */
async function begin(provider, buttons, error) {
  error.textContent = '';
  for (const b of buttons) b.disabled = true;
  try {
    const returnTo = location.origin + location.pathname;
    const answer = await api.send('POST', provider.start, { body: { return_to: returnTo }, anonymous: true });
    const { authorization_url: url, ticket } = answer.body || {};
    if (!url || !ticket) throw new Error(`The API gave no address to sign in with ${provider.name} at.`);
    sessionStorage.setItem(KEPT, JSON.stringify({ provider: provider.name, ticket, hash: location.hash }));
    // Coming back with the browser's Back button shows this page again, its buttons usable.
    window.addEventListener('pageshow', () => { for (const b of buttons) b.disabled = false; }, { once: true });
    location.assign(url);
  } catch (e) {
    error.textContent = e.message;
    for (const b of buttons) b.disabled = false;
  }
}

/**
 * Finishes a sign-in with a provider when the page's address is the provider's answer
 * (`code` or `error` in its query): posts it, with the ticket kept when it started, to that
 * provider's `callback/`, and keeps the tokens as a password login does. The kept ticket and
 * the query are removed first, whatever the outcome (the view the page showed before comes
 * back in the address). Resolves to false when the address is no such answer, to true once
 * signed in; a refusal throws (a `Problem`: its message is the problem's detail).
 */
export async function finishProviderSignIn(providers) {
  const query = new URLSearchParams(location.search);
  if (!query.has('code') && !query.has('error')) return false;
  let kept = null;
  try {
    kept = JSON.parse(sessionStorage.getItem(KEPT) || 'null');
    sessionStorage.removeItem(KEPT);
  } catch {
    kept = null;
  }
  const hash = (kept && typeof kept.hash === 'string' && kept.hash) || location.hash;
  history.replaceState(history.state, '', location.pathname + hash);
  if (!kept || typeof kept.ticket !== 'string') {
    throw new Error('No sign-in with a provider was started in this tab: sign in again.');
  }
  const provider = (providers || []).find((p) => p.name === kept.provider);
  if (!provider) throw new Error(`The API does not offer signing in with ${kept.provider}.`);
  const body = { ticket: kept.ticket, state: query.get('state') || '' };
  for (const name of ['code', 'iss', 'error']) {
    if (query.has(name)) body[name] = query.get(name);
  }
  await api.finishSignIn(provider.callback, body);
  return true;
}
