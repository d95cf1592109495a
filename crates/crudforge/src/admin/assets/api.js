// The API client: every request the page makes goes through here, with the signed-in user's
// access token. Tokens live in this module's memory only (never in web storage or cookies); an
// access token that has expired is exchanged once through the refresh endpoint, and a reload
// of the page means signing in again. A sign-in that asks for a second factor (a problem with
// a `challenge`) goes on here too: the code checked, or a new factor enrolled, with its ticket.

/** A problem answer (RFC 7807) or a network failure, thrown by `request`. */
export class Problem extends Error {
  constructor(status, body) {
    const detail = (body && (body.detail || body.title)) || `HTTP ${status}`;
    super(detail);
    this.status = status;
    this.body = body || {};
  }

  /** The member the problem names, if any (`field`, or the first of `errors`). */
  get field() {
    if (this.body.field) return this.body.field;
    const errors = this.body.errors;
    if (Array.isArray(errors) && errors.length && errors[0].field) return errors[0].field;
    return null;
  }

  /** Every (member, detail) pair the problem carries. */
  get details() {
    const out = [];
    if (Array.isArray(this.body.errors)) {
      for (const e of this.body.errors) out.push([e.field || e.member || null, e.detail || e.message || this.message]);
    }
    if (!out.length) out.push([this.field, this.message]);
    return out;
  }
}

let access = null;
let refreshToken = null;
let endpoints = { login: null, refresh: null, logout: null, factors: null };
let refreshing = null;
const listeners = new Set();

/** Sets where login, refresh and logout are (from the OpenAPI description). */
export function configure(paths) {
  endpoints = { ...endpoints, ...paths };
}

/** Whether someone is signed in. */
export function signedIn() {
  return access !== null;
}

/** Calls `fn` when the session ends (sign-out, or a refresh that failed). */
export function onSignOut(fn) {
  listeners.add(fn);
}

function forget() {
  access = null;
  refreshToken = null;
  for (const fn of listeners) fn();
}

function keep(answer) {
  access = answer.access_token;
  refreshToken = answer.refresh_token || null;
}

/** Signs in with e-mail and password (and a domain name, when given). */
export async function login(email, password, domain) {
  const body = { email, password };
  if (domain) body.domain = domain;
  const answer = await send('POST', endpoints.login, { body, anonymous: true });
  keep(answer.body);
}

/**
 * Signs in with a sign-in provider's answer: posts `body` (the ticket, and the provider's
 * `code`, `state` and `iss`, or its `error`) to the provider's `callback/` at `path`, and keeps
 * the tokens it answers as `login` does.
 */
export async function finishSignIn(path, body) {
  const answer = await send('POST', path, { body, anonymous: true });
  keep(answer.body);
}

/**
 * The next step a refused sign-in asks for, when it asks for one this page can take: the
 * problem's `challenge` (`kind` `second_factor` or `second_factor_enrollment`, and its
 * `ticket`), or null (then the refusal is only a refusal).
 */
export function challengeOf(error) {
  const c = error instanceof Problem ? error.body.challenge : null;
  if (!c || typeof c.ticket !== 'string' || !endpoints.factors) return null;
  if (c.kind === 'second_factor' && error.status === 401) return c;
  const enrolls = endpoints.factors.enroll && endpoints.factors.confirm;
  if (c.kind === 'second_factor_enrollment' && error.status === 403 && enrolls) return c;
  return null;
}

/**
 * Finishes a sign-in that asked for a second factor: the challenge's `ticket` with `proof`
 * (`{code}` or `{recovery_code}`) to `factors/verify/`; keeps the tokens as `login` does.
 */
export async function verifySecondFactor(ticket, proof) {
  const answer = await send('POST', endpoints.factors.verify, { body: { factor_ticket: ticket, ...proof }, anonymous: true });
  keep(answer.body);
}

/**
 * Whether a sign-in may use a passkey: the API has the passkeys' ceremony and this browser
 * reads its options from their JSON.
 */
export function passkeys() {
  const f = endpoints.factors;
  return Boolean(f && f.passkeyChallenge && f.passkeyVerify && window.PublicKeyCredential
    && typeof PublicKeyCredential.parseRequestOptionsFromJSON === 'function');
}

/**
 * Signs in with a passkey the browser holds: after a password with the challenge's `ticket`,
 * or alone without one (the passkey chosen names the account). Keeps the tokens as `login`
 * does.
 */
export async function signInWithPasskey(ticket) {
  const begun = await send('POST', endpoints.factors.passkeyChallenge, { body: ticket ? { factor_ticket: ticket } : {}, anonymous: true });
  const options = PublicKeyCredential.parseRequestOptionsFromJSON(begun.body.public_key);
  const credential = await navigator.credentials.get({ publicKey: options });
  if (!credential) throw new Error('No passkey was given.');
  const answer = await send('POST', endpoints.factors.passkeyVerify, {
    body: { passkey_ticket: begun.body.passkey_ticket, credential: credential.toJSON() },
    anonymous: true,
  });
  keep(answer.body);
}

/** Adds an authenticator app with an enrollment ticket: resolves to `{id, secret, otpauth_url}`. */
export async function enrollTotp(ticket) {
  const answer = await send('POST', endpoints.factors.enroll, { body: { factor_ticket: ticket }, anonymous: true });
  return answer.body;
}

/**
 * Confirms the new factor `id` with a `code` of the app and the enrollment ticket; keeps the
 * tokens it answers and resolves to its recovery codes (empty when it gave none).
 */
export async function confirmFactor(id, code, ticket) {
  const path = endpoints.factors.confirm.replace(/\{[a-z_]+\}/, encodeURIComponent(id));
  const answer = await send('POST', path, { body: { code, factor_ticket: ticket }, anonymous: true });
  keep(answer.body);
  return answer.body.recovery_codes || [];
}

/** Ends this session on the server (its refresh token revoked), then forgets the tokens. */
export async function logout() {
  try {
    if (endpoints.logout && access) {
      await send('POST', endpoints.logout, { body: refreshToken ? { refresh_token: refreshToken } : {} });
    }
  } finally {
    forget();
  }
}

async function refresh() {
  if (!refreshToken || !endpoints.refresh) return false;
  if (!refreshing) {
    const token = refreshToken;
    refreshing = send('POST', endpoints.refresh, { body: { refresh_token: token }, anonymous: true })
      .then((answer) => { keep(answer.body); return true; })
      .catch(() => { forget(); return false; })
      .finally(() => { refreshing = null; });
  }
  return refreshing;
}

/** A query string from an object (arrays repeat the key; empty values are left out). */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) v.forEach((x) => q.append(k, x));
    else q.append(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

/**
 * One request. Resolves to { status, body, etag, headers }; a problem (4xx/5xx) is thrown
 * as a `Problem`. A 401 with a refresh token available is tried once more after a refresh.
 */
export async function send(method, path, { body, headers = {}, params, anonymous = false, form } = {}) {
  const url = path + query(params);
  const attempt = async () => {
    const h = { Accept: 'application/json, application/problem+json', ...headers };
    if (access && !anonymous) h.Authorization = `Bearer ${access}`;
    let payload;
    if (form) payload = form;
    else if (body !== undefined) {
      h['Content-Type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    return fetch(url, { method, headers: h, body: payload, credentials: 'omit', cache: 'no-store' });
  };
  let res = await attempt();
  if (res.status === 401 && !anonymous && (await refresh())) res = await attempt();
  const type = res.headers.get('Content-Type') || '';
  let data = null;
  if (res.status !== 204 && res.status !== 304) {
    const raw = await res.text();
    if (raw && type.includes('json')) {
      try { data = JSON.parse(raw); } catch { data = null; }
    } else {
      data = raw || null;
    }
  }
  if (!res.ok) {
    if (res.status === 401 && !anonymous && access) forget();
    throw new Problem(res.status, data && typeof data === 'object' ? data : { detail: data || res.statusText });
  }
  return { status: res.status, body: data, etag: res.headers.get('ETag'), headers: res.headers };
}

/** A file's bytes (a preview), fetched with the access token; a problem throws. */
export async function blob(path) {
  const res = await fetch(path, { headers: access ? { Authorization: `Bearer ${access}` } : {}, credentials: 'omit' });
  if (!res.ok) throw new Problem(res.status, { detail: res.statusText });
  return res.blob();
}

/** A single-use stream ticket for an EventSource, when the API offers one (realtime). */
export async function ticket(path) {
  const answer = await send('POST', path, {});
  return answer.body && answer.body.ticket;
}
