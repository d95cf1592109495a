// Drives the admin page of a running reference application in headless Chromium, through
// Playwright's core (no browser download: the system Chromium) and axe-core, both from the
// pinned test tools (tests/tools/package.json).
//
//   node admin.mjs <base URL> <admin e-mail> <admin password> <screenshot dir> \
//     [<sign-in provider> <e-mail of who signs in there> [<domain whose members need a factor>]]
//
// With a provider (the test's loopback one, approving at once and sending the browser back),
// a step signs in through it as a new account that its claims make an administrator. Then a
// new user with an authenticator app (TOTP, its codes computed here) signs in with its
// password and a code; a user with a passkey (Chromium's virtual authenticator; the server's
// AUTH_PASSKEY_ORIGINS names the page at localhost) signs in after its password with it, then
// with it alone; with a domain named in the server's AUTH_FACTOR_DOMAINS (no grace period), a
// member of it signs in by enrolling its first factor on the page.
//
// Environment: CRUDFORGE_TOOLS_DIR (the tools' folder, node/node_modules inside) and
// CRUDFORGE_CHROMIUM (the browser). Prints one `ok <step>` line per step, the render time of
// a 50-row list, and `admin e2e complete`; the first failed step prints `FAILED <step>: ...`
// and exits with 1.

import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [base, adminEmail, adminPassword, shots, providerName, providerEmail, factorDomain] = process.argv.slice(2);
const tools = process.env.CRUDFORGE_TOOLS_DIR || '.tools';
const require = createRequire(join(tools, 'node', 'node_modules', 'noop.js'));
const { chromium } = require('playwright-core');
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

const userEmail = 'ordinary@example.com';
const userPassword = 'ordinary pass phrase';
const domainAdminEmail = 'domain.admin@example.com';
const factorEmail = 'second.factor@example.com';
const enrollEmail = 'must.enroll@example.com';
const passkeyEmail = 'passkey.user@example.com';
const XSS = '<img src=x onerror=alert(1)>';
// A 1x1 PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

let current = 'start';
function step(name) { current = name; }
function check(cond, message) { if (!cond) throw new Error(message); }

// ---- The API, straight (seeding data and making a concurrent change). ----
async function call(method, path, token, body, headers = {}) {
  const h = { ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  const res = await fetch(base + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return { data, etag: res.headers.get('ETag') };
}

async function token(email, password) {
  return (await call('POST', '/api/user/login/', null, { email, password })).data.access_token;
}

// ---- Second factors: an authenticator app's codes (RFC 6238 over RFC 4226). ----
/** The bytes of a base32 text (RFC 4648; spaces and padding ignored). */
function base32(text) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const out = [];
  let value = 0;
  let bits = 0;
  for (const ch of text.replace(/[\s=]/g, '').toUpperCase()) {
    const i = alphabet.indexOf(ch);
    if (i < 0) throw new Error(`not base32: ${text}`);
    value = ((value << 5) | i) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((value >> bits) & 0xff);
    }
  }
  return Buffer.from(out);
}

/** The 6-digit code of time step `step` (30 s since 1970) for the secret `key`: HMAC-SHA1, dynamic truncation. */
function totp(key, step) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', key).update(counter).digest();
  const at = mac[mac.length - 1] & 0xf;
  return String((mac.readUInt32BE(at) & 0x7fffffff) % 1000000).padStart(6, '0');
}

/** The current time step. */
function stepNow() {
  return Math.floor(Date.now() / 30000);
}

/** Waits into the next time step when the current one ends within `seconds`. */
async function awayFromStepEnd(seconds) {
  const left = 30000 - (Date.now() % 30000);
  if (left < seconds * 1000) await new Promise((done) => setTimeout(done, left + 200));
}

/** A 6-digit code that is no code of `key` from two steps ago to two steps ahead. */
function wrongCode(key) {
  const near = new Set([-2, -1, 0, 1, 2].map((d) => totp(key, stepNow() + d)));
  let n = 0;
  while (near.has(String(n).padStart(6, '0'))) n += 1;
  return String(n).padStart(6, '0');
}

/** A fresh browser context on the sign-in form, its errors and dialogs collected. */
async function signInPage(at = base) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  lastPage = page;
  const seen = { errors: [] };
  page.on('dialog', async (d) => { seen.errors.push(`dialog: ${d.message()}`); await d.dismiss(); });
  page.on('pageerror', (e) => seen.errors.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) seen.errors.push(`console: ${m.text()}`); });
  await page.goto(`${at}/admin/`);
  await page.waitForSelector('#signin-email');
  return { context, page, seen };
}

/** Serious or critical axe violations on `page`, as text (empty when none). */
async function axeSerious(page) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(axeSource);
  const results = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  return serious.length ? JSON.stringify(serious.map((v) => [v.id, v.impact, v.nodes.map((n) => n.target)])) : '';
}

// ---- The browser. ----
const browser = await chromium.launch({
  executablePath: process.env.CRUDFORGE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

let lastPage = null;

async function open(email, password) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  lastPage = page;
  const seen = { dialogs: [], errors: [] };
  page.on('dialog', async (d) => { seen.dialogs.push(d.message()); await d.dismiss(); });
  page.on('pageerror', (e) => seen.errors.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) seen.errors.push(`console: ${m.text()}`); });
  await page.goto(`${base}/admin/`);
  await page.fill('#signin-email', email);
  await page.fill('#signin-password', password);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector('nav a', { timeout: 15000 });
  return { context, page, seen };
}

async function rows(page) {
  return page.$$eval('#list tbody tr', (trs) => trs.map((tr) => ({
    id: tr.dataset.id,
    deleted: tr.classList.contains('deleted'),
    cells: Object.fromEntries([...tr.querySelectorAll('td[data-member]')].map((td) => [td.dataset.member, td.textContent])),
  })));
}

async function showList(page, key) {
  await page.evaluate((k) => { location.hash = `#/${k}`; }, key);
  await page.waitForSelector('#list', { state: 'attached' });
  await settled(page);
}

/** Clicks Apply and waits until the list it asked for is on screen. */
async function applyList(page) {
  await page.click('#list-apply');
  await settled(page);
}

/** Waits until no list load is under way. */
async function settled(page) {
  await page.waitForFunction(() => {
    const v = document.getElementById('view');
    return v && v.dataset.rows !== undefined && v.dataset.loading === undefined;
  });
}

let failed = false;
try {
  step('seed');
  const admin = await token(adminEmail, adminPassword);
  const items = Array.from({ length: 55 }, (_, i) => ({ name: `Critter ${String(i).padStart(2, '0')}`, species: i % 2 ? 'cat' : 'dog', cuteness_level: i }));
  await call('POST', '/api/critters/batch/', admin, { items });
  await call('POST', '/api/critters/', admin, { name: XSS, species: 'cat' });
  await call('POST', '/api/user/', admin, { email: userEmail, password: userPassword });
  const habitat = (await call('POST', '/api/habitats/', admin, { name: 'Savanna', climate: 'dry' })).data;
  console.log('ok seed: 56 critters, a habitat, an ordinary user');

  step('sign-in');
  const { page, seen } = await open(adminEmail, adminPassword);
  const stored = await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie]);
  check(stored[0] === 0 && stored[1] === 0 && stored[2] === '', `something was stored: ${JSON.stringify(stored)}`);
  console.log('ok sign-in (nothing in localStorage, sessionStorage or cookies)');

  step('list');
  await showList(page, 'critters');
  let list = await rows(page);
  check(list.length === 25, `25 rows on the first page, got ${list.length}`);
  check(await page.$('#page-next:not([disabled])'), 'a next page');
  await page.click('th button[data-sort="cuteness_level"]');
  await page.waitForFunction(() => document.querySelector('th[aria-sort="ascending"]'));
  await page.click('th button[data-sort="cuteness_level"]');
  await page.waitForFunction(() => document.querySelector('th[aria-sort="descending"]'));
  await page.waitForFunction(() => document.querySelector('#list tbody tr td[data-member="cuteness_level"]')?.textContent === '54');
  await page.click('#page-next');
  await page.waitForFunction(() => /^Page 2 /.test(document.getElementById('page-info').textContent));
  console.log('ok list: 25 rows, sorted both ways by a click on the header, page 2');

  step('filter');
  await page.fill('#list-filter', 'cuteness_level >= 50');
  await applyList(page);
  list = await rows(page);
  check(list.length === 5 && list.every((r) => Number(r.cells.cuteness_level) >= 50), `filter expression: ${JSON.stringify(list.map((r) => r.cells.cuteness_level))}`);
  await page.fill('#list-filter', '');
  await page.selectOption('#filter-member', 'species');
  await page.selectOption('#filter-op', 'eq');
  await page.fill('#filter-value', 'dog');
  await page.click('#filter-add');
  await page.waitForFunction(() => document.querySelectorAll('#list tbody tr').length > 0 && [...document.querySelectorAll('#list td[data-member="species"]')].every((td) => td.textContent === 'dog'));
  await page.fill('#list-search', 'critter 1');
  await applyList(page);
  list = await rows(page);
  check(list.length === 5 && list.every((r) => /^Critter 1\d$/.test(r.cells.name) && r.cells.species === 'dog'), `search with a simple filter: ${JSON.stringify(list.map((r) => r.cells.name))}`);
  await page.fill('#list-search', '');
  await page.selectOption('#list-scope', 'cute');
  await applyList(page);
  list = await rows(page);
  check(list.length === 3 && list.every((r) => Number(r.cells.cuteness_level) >= 50 && r.cells.species === 'dog'), `named filter with a simple filter: ${JSON.stringify(list.map((r) => r.cells.cuteness_level))}`);
  await page.selectOption('#list-scope', '');
  await page.fill('#list-search', 'critter 1');
  await applyList(page);
  await page.click('ul.filters button');
  await settled(page);
  await page.fill('#list-search', '');
  await applyList(page);
  console.log('ok filter: expression, simple filter, search, named filter');

  step('xss');
  await page.fill('#list-search', 'onerror');
  await applyList(page);
  list = await rows(page);
  check(list.length === 1 && list[0].cells.name === XSS, `the hostile name as text: ${JSON.stringify(list)}`);
  check(await page.$$eval('#list img', (imgs) => imgs.length) === 0, 'an img element in the list');
  await page.click('#list tbody tr a');
  await page.waitForSelector('#record');
  check(await page.$eval('#record dd[data-member="name"]', (dd) => dd.textContent) === XSS, 'the hostile name on its page');
  check(await page.$$eval('#record img', (imgs) => imgs.length) === 0, 'an img element on its page');
  await page.waitForTimeout(300);
  check(seen.dialogs.length === 0, `a dialog opened: ${seen.dialogs}`);
  console.log('ok xss: shown as text, no element, no dialog');

  step('create');
  await page.evaluate(() => { location.hash = '#/critters/new'; });
  await page.waitForSelector('#create-form');
  await page.fill('#create-form input[name="name"]', '   ');
  await page.fill('#create-form input[name="species"]', 'axolotl');
  await page.click('#create-submit');
  await page.waitForFunction(() => document.querySelector('[data-error-for="name"]').textContent.length > 0);
  const nameError = await page.$eval('[data-error-for="name"]', (p) => p.textContent);
  check(await page.$eval('#create-form input[name="name"]', (i) => i.getAttribute('aria-invalid')) === 'true', 'the name input marked invalid');
  await page.screenshot({ path: join(shots, 'form.png') });
  await page.fill('#create-form input[name="name"]', 'Axel');
  // The habitat picker: typing searches habitats and offers them by name.
  await page.fill('#create-form input[name="habitat_id"]', 'sav');
  await page.waitForFunction((id) => [...document.querySelectorAll('#create-form datalist option')].some((o) => o.value === id && o.textContent === 'Savanna'), habitat.id);
  await page.fill('#create-form input[name="habitat_id"]', habitat.id);
  await page.click('#create-submit');
  await page.waitForFunction(() => /^#\/critters\/[0-9a-f-]{36}$/.test(location.hash));
  await page.waitForSelector('#record');
  const createdId = await page.evaluate(() => location.hash.split('/')[2]);
  check(await page.$eval('#record dd[data-member="name"]', (dd) => dd.textContent) === 'Axel', 'created');
  check(await page.$eval('#record dd[data-member="habitat_id"]', (dd) => dd.textContent) === habitat.id, 'created in the habitat picked');
  console.log(`ok create: the problem shown next to name (${nameError}), then created, its habitat found by name in the picker`);

  step('stale If-Match');
  await call('PATCH', `/api/critters/${createdId}`, admin, { cuteness_level: 77 });
  await page.fill('#update-form input[name="species"]', 'salamander');
  await page.click('#update-submit');
  await page.waitForSelector('#conflict:not([hidden])');
  const now = (await call('GET', `/api/critters/${createdId}`, admin)).data;
  check(now.species === 'axolotl' && now.cuteness_level === 77, `overwritten: ${JSON.stringify(now)}`);
  check((await page.$eval('#conflict', (c) => c.textContent)).includes('77'), 'the current values shown');
  await page.click('#conflict-reload');
  await page.waitForFunction(() => document.querySelector('#record dd[data-member="cuteness_level"]')?.textContent === '77');
  await page.fill('#update-form input[name="species"]', 'salamander');
  await page.click('#update-submit');
  await page.waitForFunction(() => document.querySelector('#record dd[data-member="species"]')?.textContent === 'salamander');
  console.log('ok stale If-Match: 412 shown as a conflict, nothing overwritten; saved after reloading');

  step('file upload');
  await page.setInputFiles('#update-form input[type=file][name="photo"]', { name: 'dot.png', mimeType: 'image/png', buffer: Buffer.from(PNG, 'base64') });
  await page.click('#update-submit');
  await page.waitForFunction(() => {
    const img = document.querySelector('#record dd[data-member="photo"] img');
    return img && img.complete && img.naturalWidth === 1;
  });
  check((await call('GET', `/api/critters/${createdId}`, admin)).data.photo.name === 'dot.png', 'the photo stored');
  console.log('ok file upload: a PNG sent as a multipart part, its preview shown');

  step('relations');
  await page.click('details[data-relation="visits"] summary');
  await page.waitForFunction(() => !/Loading/.test(document.querySelector('details[data-relation="visits"]').textContent.replace('Visits', '')));
  await page.click('details[data-relation="habitat"] summary');
  await page.waitForFunction(() => document.querySelector('details[data-relation="habitat"] table')?.textContent.includes('Savanna'));
  console.log('ok relations: expanded on demand (its habitat, its visits)');

  step('blueprint hints');
  await page.evaluate(() => { location.hash = '#/visits'; });
  await page.waitForSelector('#list thead th[data-member]');
  const visitsNav = await page.$eval('nav a[data-key="visits"]', (a) => a.textContent.trim());
  check(visitsNav === 'Vet visits', `the blueprint's label: ${visitsNav}`);
  const heads = await page.$$eval('#list thead th[data-member]', (ths) => ths.map((t) => [t.dataset.member, t.textContent.replace(/[▲▼]/g, '').trim()]));
  check(JSON.stringify(heads) === JSON.stringify([['note', 'Note'], ['critter_id', 'Critter']]), `the blueprint's columns: ${JSON.stringify(heads)}`);
  await page.evaluate((id) => { location.hash = `#/critters/${id}`; }, createdId);
  await page.waitForSelector('button[data-action="delete"]');
  console.log('ok blueprint hints: its label, its columns in order, a member label');

  step('delete and restore');
  await page.click('button[data-action="delete"]');
  await page.click('button[data-action="delete"]');
  await page.waitForFunction(() => location.hash === '#/critters');
  await page.waitForSelector('#list tbody');
  await page.fill('#list-search', 'Axel');
  await page.check('#list-deleted');
  await applyList(page);
  list = await rows(page);
  check(list.length === 1 && list[0].deleted, `the deleted row listed: ${JSON.stringify(list)}`);
  await page.click('#list button[data-action="restore"]');
  await page.waitForFunction(() => document.querySelectorAll('#list tbody tr.deleted').length === 0 && document.querySelectorAll('#list tbody tr').length === 1);
  check((await call('GET', `/api/critters/${createdId}`, admin)).data.deleted_at === null, 'restored');
  await page.uncheck('#list-deleted');
  await page.fill('#list-search', '');
  await applyList(page);
  console.log('ok delete and restore');

  step('batch delete');
  await page.fill('#list-search', 'Critter 0');
  await applyList(page);
  const boxes = await page.$$eval('#list tbody input[type=checkbox]', (b) => b.length);
  check(boxes === 10, `10 rows to select, got ${boxes}`);
  // Selectors, not handles: the live feed may redraw the rows meanwhile (the selection stays).
  await page.check('#list tbody tr:nth-child(1) input[type=checkbox]');
  await page.check('#list tbody tr:nth-child(2) input[type=checkbox]');
  await page.waitForFunction(() => document.querySelectorAll('#list tbody input[type=checkbox]:checked').length === 2);
  await page.click('#batch-delete');
  await page.waitForFunction(() => document.querySelectorAll('#list tbody tr').length === 8);
  await page.fill('#list-search', '');
  await applyList(page);
  console.log('ok batch delete of two selected rows');

  step('render 50 rows');
  await page.selectOption('#list-size', '50');
  await applyList(page);
  await page.waitForFunction(() => document.getElementById('view').dataset.rows === '50');
  const renderMs = await page.$eval('#view', (v) => v.dataset.renderMs);
  await page.screenshot({ path: join(shots, 'list.png') });
  console.log(`ok render: a 50-row list in ${renderMs} ms after its answer arrived`);
  console.log(`render_ms_50_rows=${renderMs}`);

  step('live refresh');
  await page.waitForFunction(() => document.getElementById('view').dataset.live === 'on');
  await call('POST', '/api/critters/', admin, { name: 'Live Lynx', species: 'lynx', cuteness_level: 100 });
  await page.waitForFunction(() => document.querySelector('#list tbody tr td[data-member="name"]')?.textContent === 'Live Lynx', null, { timeout: 15000 });
  console.log('ok live refresh: a critter created elsewhere appears in the open list');

  step('chart');
  // The page's chart shows what the API's aggregate answers: the count per species, the
  // critter created just above alone in its group.
  const groups = (await call('GET', '/api/critters/aggregate/?group_by=species&sort=-count&page_size=50', admin)).data.groups;
  await page.click('#chart-panel summary');
  await page.selectOption('#chart-by', 'species');
  await page.selectOption('#chart-measure', 'count');
  await page.click('#chart-draw');
  await page.waitForSelector('#chart table.chart tbody tr');
  const bars = await page.$$eval('#chart tbody tr', (trs) => trs.map((tr) => [tr.querySelector('th').textContent, Number(tr.querySelector('td.number').textContent), Number(tr.querySelector('meter').value)]));
  check(JSON.stringify(bars) === JSON.stringify(groups.map((g) => [g.species, g.count, g.count])), `the chart ${JSON.stringify(bars)} against the API's ${JSON.stringify(groups)}`);
  check(bars.some(([species, count]) => species === 'lynx' && count === 1), 'the lynx alone in its group');
  await page.selectOption('#chart-measure', 'avg:cuteness_level');
  await page.click('#chart-draw');
  await page.waitForFunction(() => document.querySelector('#chart table')?.getAttribute('aria-label')?.startsWith('Average'));
  const lynx = await page.$eval('#chart tbody tr[data-group="lynx"] td.number', (td) => td.textContent);
  check(Number(lynx) === 100, `the lynx's average cuteness: ${lynx}`);
  console.log(`ok chart: ${bars.length} species counted as the API counts them, then an average`);

  step('export');
  await call('POST', '/api/critters/', admin, { name: '=1+2', species: 'formula', cuteness_level: 1 });
  await page.fill('#list-search', '');
  await applyList(page);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
  const csv = readFileSync(await download.path(), 'utf8');
  const lines = csv.split('\r\n').filter((l) => l !== '');
  const total = (await call('GET', '/api/critters/?page_size=1', admin)).data.pagination.total;
  check(lines.length === total + 1, `a header and ${total} rows, got ${lines.length} lines`);
  check(lines[0].split(',').includes('name') && lines[0].split(',').includes('species'), `the header: ${lines[0]}`);
  check(lines.some((l) => l.startsWith("'=1+2,") || l.includes(",'=1+2,")), 'the formula neutralized');
  check(!lines.some((l) => l.startsWith('=1+2,') || l.includes(',=1+2,')), 'no raw formula');
  console.log(`ok export: ${total} rows as CSV, the formula neutralized`);

  step('import');
  await page.click('#import-panel summary');
  // The import's own access, as the description tells it.
  const importWho = await page.$eval('#import-who', (p) => p.textContent);
  check(importWho === 'Who may import: administrators only.', `the import's access: ${importWho}`);
  await page.setInputFiles('#import-file', { name: 'owls.csv', mimeType: 'text/csv', buffer: Buffer.from('name,species,cuteness_level\r\nOwl one,owl,5\r\nOwl two,owl,lots\r\n') });
  await page.click('#import-send');
  await page.waitForSelector('#import-report .error');
  const refusal = await page.$eval('#import-report', (r) => r.textContent);
  check(/line 3/.test(refusal) && /cuteness_level/.test(refusal), `the refused line: ${refusal}`);
  check((await call('GET', '/api/critters/?species=owl', admin)).data.data.length === 0, 'nothing written');
  await page.setInputFiles('#import-file', { name: 'owls.csv', mimeType: 'text/csv', buffer: Buffer.from('name,species,cuteness_level\r\nOwl one,owl,5\r\nOwl two,owl,6\r\n') });
  await page.click('#import-send');
  await page.waitForSelector('#import-report .ok');
  check((await call('GET', '/api/critters/?species=owl', admin)).data.data.length === 2, 'two owls written');
  console.log('ok import: a bad line refused with its line and member, then two rows written');

  step('axe');
  await page.evaluate(axeSource);
  const results = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  check(serious.length === 0, `axe: ${JSON.stringify(serious.map((v) => [v.id, v.impact, v.nodes.map((n) => n.target)]))}`);
  await page.evaluate(() => { location.hash = '#/critters/new'; });
  await page.waitForSelector('#create-form');
  const formResults = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const formSerious = formResults.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  check(formSerious.length === 0, `axe on the form: ${JSON.stringify(formSerious.map((v) => [v.id, v.impact, v.nodes.map((n) => n.target)]))}`);
  console.log(`ok axe: no serious or critical violation (list: ${results.violations.length} minor, form: ${formResults.violations.length} minor)`);

  step('role grant');
  await page.evaluate(() => { location.hash = '#/user'; });
  await page.waitForSelector('#list tbody tr');
  const userRow = await page.$$eval('#list tbody tr', (trs, email) => trs.find((tr) => tr.textContent.includes(email))?.dataset.id, userEmail);
  check(userRow, 'the ordinary user listed');
  await page.evaluate((id) => { location.hash = `#/user/${id}`; }, userRow);
  await page.waitForSelector('#grant-form');
  await page.fill('#grant-form input[type=text]', 'USER');
  await page.click('#grant-submit');
  await page.waitForSelector('#roles-table tr[data-role="USER"]');
  check(await page.$('#user-disable'), 'a disable button for another user');
  await page.fill('#grant-form input[type=text]', 'ADMIN');
  await page.click('#grant-submit');
  await page.waitForSelector('#roles-table tr[data-role="ADMIN"]');
  await page.click('#roles-table tr[data-role="ADMIN"] button');
  await page.waitForFunction(() => !document.querySelector('#roles-table tr[data-role="ADMIN"]') && document.querySelector('#roles-table tr[data-role="USER"]'));
  await page.click('#user-disable');
  await page.waitForSelector('#user-enable');
  let disabled = (await call('GET', `/api/user/${userRow}`, admin)).data;
  check(disabled.is_enabled === false, 'disabled');
  await page.click('#user-enable');
  await page.waitForSelector('#user-disable');
  console.log('ok users: USER and ADMIN granted, ADMIN revoked, the account disabled and enabled again');
  const before = await token(userEmail, userPassword);
  await page.click('#end-sessions');
  await page.waitForFunction(() => /sessions? of the user ended/.test(document.getElementById('status').textContent));
  const refused = await fetch(`${base}/api/user/me/`, { headers: { Authorization: `Bearer ${before}` } });
  check(refused.status === 401, `an ended session still works: ${refused.status}`);
  console.log('ok end sessions: a token issued before is refused (401)');
  await page.evaluate(() => { location.hash = '#/user/new'; });
  await page.waitForSelector('#create-form');
  await page.fill('#create-form input[name="email"]', 'made.here@example.com');
  await page.fill('#create-form input[name="password"]', 'made here pass phrase');
  await page.click('#create-submit');
  await page.waitForSelector('#grant-form');
  check((await token('made.here@example.com', 'made here pass phrase')).length > 0, 'the new user signs in');
  console.log('ok users: a user created from the page signs in');
  const userResults = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const userSerious = userResults.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  check(userSerious.length === 0, `axe on a user's page: ${JSON.stringify(userSerious.map((v) => [v.id, v.impact, v.nodes.map((n) => n.target)]))}`);
  console.log("ok axe on a user's page: no serious or critical violation");

  check(seen.errors.length === 0, `errors in the page: ${seen.errors.join(' | ')}`);

  step('jobs');
  // The server runs no job in this test (JOBS_WORKERS=0): a job stays as the page leaves it.
  await page.click('nav a[data-key="@jobs"]');
  const prune = '#schedules-table tr[data-name="crudforge.prune_jobs"]';
  await page.waitForSelector(prune);
  await page.click(`${prune} button[data-action="run"]`);
  await page.waitForSelector('#jobs-table tbody tr[data-state="queued"]');
  const queued = await page.$eval('#jobs-table tbody tr[data-state="queued"]', (tr) => ({ id: tr.dataset.id, kind: tr.children[1].textContent }));
  check(queued.kind === 'crudforge.prune_jobs', `the schedule's job: ${JSON.stringify(queued)}`);
  const jobRow = `#jobs-table tr[data-id="${queued.id}"]`;
  await page.click(`${jobRow} button[data-action="cancel"]`);
  await page.waitForSelector(`${jobRow}[data-state="cancelled"]`);
  check(!(await page.$(`${jobRow} button[data-action="cancel"]`)), 'cancel offered on a cancelled job');
  await page.click(`${jobRow} button[data-action="retry"]`);
  await page.waitForSelector(`${jobRow}[data-state="queued"]`);
  const listed = (await call('GET', '/api/jobs/?state=queued', admin)).data.items;
  check(listed.some((j) => String(j.id) === queued.id), `the API's queued jobs: ${JSON.stringify(listed)}`);
  await page.selectOption('#jobs-filters select', 'cancelled');
  await page.waitForSelector('#jobs-empty');
  await page.selectOption('#jobs-filters select', 'queued');
  await page.waitForSelector(jobRow);
  const jobsResults = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const jobsSerious = jobsResults.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  check(jobsSerious.length === 0, `axe on the Jobs view: ${JSON.stringify(jobsSerious.map((v) => [v.id, v.impact, v.nodes.map((n) => n.target)]))}`);
  check(seen.errors.length === 0, `errors in the page: ${seen.errors.join(' | ')}`);
  console.log("ok jobs: a schedule run now from the page, its job cancelled and queued again, the state filter, axe");

  step('keys');
  // A key limited to reading critters, expiring in 7 days: its secret shown once, listed with
  // its scope, exchanged at token_login (a read works, a write is 403), its last use shown,
  // then revoked from the page (the exchange is refused).
  await page.click('nav a[data-key="@keys"]');
  await page.waitForSelector('#key-form');
  await page.waitForSelector('#keys-table, #keys-empty');
  await page.fill('#key-description', 'e2e reader');
  await page.selectOption('#key-expiry', '7');
  await page.check('#key-access input[value="chosen"]');
  check(await page.$eval('#key-scopes input[data-scope="User:update"]', (i) => i.disabled), 'a write of users offered to a key');
  await page.check('#key-scopes input[data-scope="Critter:read"]');
  await page.click('#key-create');
  await page.waitForSelector('#key-secret-value');
  const secret = await page.$eval('#key-secret-value', (i) => i.value);
  check(/^[A-Za-z0-9_-]{43}$/.test(secret), `the secret shown: ${secret}`);
  const keyRow = '#keys-table tr[data-description="e2e reader"]';
  await page.waitForSelector(keyRow);
  const listedKey = await page.$eval(keyRow, (tr) => ({ state: tr.dataset.state, scopes: tr.querySelector('.key-scopes').textContent, used: tr.querySelector('.key-last-used').textContent }));
  check(listedKey.state === 'active' && listedKey.scopes === 'Critter:read' && listedKey.used === '—', `the key listed: ${JSON.stringify(listedKey)}`);
  const storedKey = (await call('GET', '/api/tokens/?kind=api_key', admin)).data.data.find((k) => k.description === 'e2e reader');
  check(storedKey && storedKey.scopes === 'Critter:read' && storedKey.expires_at && !('token' in storedKey), `the key stored: ${JSON.stringify(storedKey)}`);
  const keyAccess = (await call('POST', '/api/user/token_login', null, { token: secret })).data.access_token;
  await call('GET', '/api/critters/?page_size=1', keyAccess);
  const keyWrite = await fetch(`${base}/api/critters/`, { method: 'POST', headers: { Authorization: `Bearer ${keyAccess}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Nope', species: 'cat' }) });
  check(keyWrite.status === 403, `a write with a read key: ${keyWrite.status}`);
  await page.click('#key-secret-done');
  check(!(await page.$('#key-secret-value')), 'the secret still shown');
  await page.click('nav a[data-key="critters"]');
  await page.waitForSelector('#list', { state: 'attached' });
  await page.click('nav a[data-key="@keys"]');
  await page.waitForFunction((sel) => { const td = document.querySelector(`${sel} .key-last-used`); return td && td.textContent !== '—'; }, keyRow);
  check(!(await page.$('#key-secret-value')), 'the secret shown again');
  const keysResults = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const keysSerious = keysResults.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  check(keysSerious.length === 0, `axe on the API keys view: ${JSON.stringify(keysSerious.map((v) => [v.id, v.impact, v.nodes.map((n) => n.target)]))}`);
  await page.click(`${keyRow} button[data-action="revoke"]`);
  await page.click(`${keyRow} button[data-action="revoke"]`);
  await page.waitForSelector(`${keyRow}[data-state="revoked"]`);
  const exchanged = await fetch(`${base}/api/user/token_login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: secret }) });
  check(exchanged.status === 401, `a revoked key exchanged: ${exchanged.status}`);
  check(seen.errors.length === 0, `errors in the page: ${seen.errors.join(' | ')}`);
  console.log('ok keys: a key limited to Critter:read created (its secret shown once), listed, exchanged (read 200, write 403), its last use shown, revoked (the exchange refused), axe');

  step('ordinary user');
  const other = await open(userEmail, userPassword);
  const nav = await other.page.$$eval('nav a', (as) => as.map((a) => a.dataset.key));
  check(!nav.includes('user'), `the user list offered: ${nav}`);
  check(!nav.includes('@jobs'), `the Jobs view offered: ${nav}`);
  check(nav.includes('@keys') && !nav.includes('tokens'), `the API keys view, not the token list: ${nav}`);
  await other.page.click('nav a[data-key="@keys"]');
  await other.page.waitForSelector('#key-form');
  await other.page.waitForSelector('#keys-table, #keys-empty');
  check(!(await other.page.$('#keys-show')), "the choice of everyone's keys offered to an ordinary user");
  check(!(await other.page.$('#keys-table tr[data-description="e2e reader"]')), "an administrator's key shown to an ordinary user");
  check(nav.includes('critters'), `critters listed: ${nav}`);
  await showList(other.page, 'critters');
  check(!(await other.page.$('#batch-delete')), 'batch delete offered');
  check(!(await other.page.$('#list-deleted')), 'include deleted offered');
  check(!(await other.page.$('#list button[data-action="delete"]')), 'delete offered');
  check(await other.page.$('#create-link'), 'create offered to a signed-in user');
  await other.page.fill('#list-search', 'Critter 2');
  await applyList(other.page);
  check((await rows(other.page)).length === 10 && !(await other.page.$('#list-error')), 'search as an ordinary user');
  await other.page.click('#list tbody tr a');
  await other.page.waitForSelector('#update-form');
  check(!(await other.page.$('button[data-action="delete"]')), 'delete offered on the row');
  check(!(await other.page.$('#update-form [name="vet_notes"]')), 'the administrators-only member offered');
  await showList(other.page, 'habitats');
  check(!(await other.page.$('#create-link')), 'habitat create offered');
  await showList(other.page, 'domains');
  check(!(await other.page.$('#create-link')), 'domain create offered (administrators only by rule)');
  check(other.seen.errors.length === 0, `errors in the page: ${other.seen.errors.join(' | ')}`);
  console.log('ok ordinary user: no user list, no delete, batch, deleted rows, admin member, habitat or domain writes offered');

  step('domain administrator');
  // An ADMIN role in one domain: `me/` of the reference application names the role only, so
  // the page reads the role rows to tell it from a global one, and offers no more than to an
  // ordinary user (the API would refuse the rest).
  const domainId = (await call('POST', '/api/domains/', admin, { name: 'Acme' })).data.id;
  const scoped = (await call('POST', '/api/user/', admin, { email: domainAdminEmail, password: userPassword })).data;
  await call('POST', `/api/user/${scoped.id}/role/`, admin, { role: 'ADMIN', domain_id: domainId });
  const scopedMe = (await call('GET', '/api/user/me/', await token(domainAdminEmail, userPassword))).data;
  check(JSON.stringify(scopedMe.roles).includes('ADMIN'), `the domain administrator's roles: ${JSON.stringify(scopedMe.roles)}`);
  const third = await open(domainAdminEmail, userPassword);
  const who = await third.page.$eval('#who', (e) => e.textContent);
  check(!who.includes('administrator'), `a domain administrator shown as a global one: ${who}`);
  const scopedNav = await third.page.$$eval('nav a', (as) => as.map((a) => a.dataset.key));
  check(!scopedNav.includes('user'), `the user list offered to a domain administrator: ${scopedNav}`);
  await showList(third.page, 'critters');
  check(!(await third.page.$('#batch-delete')), 'batch delete offered to a domain administrator');
  check(!(await third.page.$('#list button[data-action="delete"]')), 'delete offered to a domain administrator');
  await showList(third.page, 'habitats');
  check(!(await third.page.$('#create-link')), 'habitat create offered to a domain administrator');
  check(third.seen.errors.length === 0, `errors in the page: ${third.seen.errors.join(' | ')}`);
  await third.context.close();
  console.log('ok domain administrator: offered no user list, delete, batch or habitat writes');

  step('sign-out');
  await other.page.click('#signout');
  await other.page.waitForSelector('#signin-email');
  console.log('ok sign-out');

  if (providerName) {
    step('provider sign-in');
    // Last, so no earlier step sees its account. The signed-out page offers the provider; a
    // click starts the sign-in, the provider approves at once and sends the browser back to
    // /admin/ with a code, and the page finishes the sign-in.
    lastPage = other.page;
    const signInWith = other.page.getByRole('button', { name: `Sign in with ${providerName}`, exact: true });
    await signInWith.waitFor();
    const group = await other.page.$eval('.signin-providers', (g) => [g.getAttribute('role'), document.getElementById(g.getAttribute('aria-labelledby'))?.textContent]);
    check(group[0] === 'group' && group[1] === 'Or sign in with', `the providers' group: ${JSON.stringify(group)}`);
    await other.page.evaluate(axeSource);
    const signinResults = await other.page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
    const signinSerious = signinResults.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    check(signinSerious.length === 0, `axe on the sign-in form: ${JSON.stringify(signinSerious.map((v) => [v.id, v.impact, v.nodes.map((n) => n.target)]))}`);
    await signInWith.click();
    await other.page.waitForSelector('nav a', { timeout: 15000 });
    const signedIn = await other.page.$eval('#who', (e) => e.textContent);
    check(signedIn === `${providerEmail} (administrator)`, `the user shown: ${signedIn}`);
    const providerNav = await other.page.$$eval('nav a', (as) => as.map((a) => a.dataset.key));
    check(providerNav.includes('user') && providerNav.includes('@jobs'), `an administrator's navigation: ${providerNav}`);
    const left = await other.page.evaluate(() => [location.pathname, location.search, sessionStorage.length, localStorage.length, document.cookie]);
    check(JSON.stringify(left) === JSON.stringify(['/admin/', '', 0, 0, '']), `left behind (path, query, storage, cookies): ${JSON.stringify(left)}`);
    check(other.seen.errors.length === 0, `errors in the page: ${other.seen.errors.join(' | ')}`);
    console.log(`ok provider sign-in: "Sign in with ${providerName}" (axe: ${signinResults.violations.length} minor), back from the provider signed in as ${providerEmail}, an administrator by its groups; the query and the kept ticket removed`);
  }

  step('second factor sign-in');
  // A user of its own: once its factor is confirmed, its password alone signs in no more (and
  // its earlier sessions end). Enrolled and confirmed through the API with the code of the
  // previous time step, so that the current step's code, each step being taken once, is
  // still unused when the page sends it.
  await call('POST', '/api/user/', admin, { email: factorEmail, password: userPassword });
  const factorToken = await token(factorEmail, userPassword);
  const enrolled = (await call('POST', '/api/user/me/factors/totp/', factorToken, { label: 'e2e' })).data;
  const factorKey = base32(enrolled.secret);
  await awayFromStepEnd(3);
  const confirmed = (await call('POST', `/api/user/me/factors/${enrolled.id}/confirm/`, factorToken, { code: totp(factorKey, stepNow() - 1) })).data;
  check(confirmed.access_token && confirmed.recovery_codes?.length === 10, `the factor confirmed: ${JSON.stringify(Object.keys(confirmed))}`);
  const fourth = await signInPage();
  await fourth.page.fill('#signin-email', factorEmail);
  await fourth.page.fill('#signin-password', userPassword);
  await fourth.page.click('form.signin button[type=submit]');
  await fourth.page.waitForSelector('#factor-code');
  const codeInput = await fourth.page.$eval('#factor-code', (i) => [i.getAttribute('autocomplete'), i.getAttribute('inputmode'), document.querySelector('label[for="factor-code"]')?.textContent, document.activeElement === i]);
  check(JSON.stringify(codeInput) === JSON.stringify(['one-time-code', 'numeric', 'Code', true]), `the code's input (autocomplete, inputmode, label, focused): ${JSON.stringify(codeInput)}`);
  await fourth.page.click('#factor-switch');
  await fourth.page.waitForFunction(() => document.querySelector('label[for="factor-code"]')?.textContent === 'Recovery code');
  await fourth.page.click('#factor-switch');
  await fourth.page.waitForFunction(() => document.querySelector('label[for="factor-code"]')?.textContent === 'Code');
  const factorAxe = await axeSerious(fourth.page);
  check(!factorAxe, `axe on the code's step: ${factorAxe}`);
  await fourth.page.fill('#factor-code', wrongCode(factorKey));
  await fourth.page.click('#factor-submit');
  await fourth.page.waitForFunction(() => document.getElementById('factor-error')?.textContent.length > 0);
  const codeRefusal = await fourth.page.$eval('#factor-error', (p) => p.textContent);
  check(/code/i.test(codeRefusal) && !(await fourth.page.$('nav a')), `the wrong code's refusal: ${codeRefusal}`);
  await awayFromStepEnd(2);
  await fourth.page.fill('#factor-code', totp(factorKey, stepNow()));
  await fourth.page.click('#factor-submit');
  await fourth.page.waitForSelector('nav a', { timeout: 15000 });
  const factorWho = await fourth.page.$eval('#who', (e) => e.textContent);
  check(factorWho === factorEmail, `the user shown: ${factorWho}`);
  const factorLeft = await fourth.page.evaluate(() => [sessionStorage.length, localStorage.length, document.cookie]);
  check(JSON.stringify(factorLeft) === JSON.stringify([0, 0, '']), `left behind (storage, cookies): ${JSON.stringify(factorLeft)}`);
  check(fourth.seen.errors.length === 0, `errors in the page: ${fourth.seen.errors.join(' | ')}`);
  await fourth.context.close();
  console.log(`ok second factor sign-in: the password, then the code's step (a wrong code refused: "${codeRefusal}"), then the current code: signed in as ${factorEmail}`);

  step('passkey sign-in');
  // A user of its own registers a passkey in Chromium's virtual authenticator (its WebAuthn
  // domain over CDP: a platform authenticator that keeps passkeys and verifies its user), from
  // the page's origin the server sets passkeys up for (localhost: an IP address cannot be a
  // relying party's id). Then the page signs it in after its password with the passkey, and
  // after a reload with the passkey alone.
  const local = base.replace('://127.0.0.1', '://localhost');
  await call('POST', '/api/user/', admin, { email: passkeyEmail, password: userPassword });
  const pk = await signInPage(local);
  const cdp = await pk.context.newCDPSession(pk.page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  const pkToken = await token(passkeyEmail, userPassword);
  const registered = await pk.page.evaluate(async (t) => {
    const post = async (path, body) => {
      const r = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${t}` }, body: JSON.stringify(body) });
      return [r.status, await r.json()];
    };
    const [s, begun] = await post('/api/user/me/factors/passkey/', { label: 'browser' });
    if (s !== 201) return [s, begun];
    const made = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(begun.public_key) });
    return post(`/api/user/me/factors/passkey/${begun.id}/`, { credential: made.toJSON() });
  }, pkToken);
  check(registered[0] === 200 && registered[1].recovery_codes?.length === 10, `the passkey registered: ${JSON.stringify(registered)}`);
  await pk.page.fill('#signin-email', passkeyEmail);
  await pk.page.fill('#signin-password', userPassword);
  await pk.page.click('form.signin button[type=submit]');
  await pk.page.waitForSelector('#factor-passkey');
  const pkAxe = await axeSerious(pk.page);
  check(!pkAxe, `axe on the passkey's step: ${pkAxe}`);
  await pk.page.click('#factor-passkey');
  await pk.page.waitForSelector('nav a', { timeout: 15000 });
  const afterPassword = await pk.page.$eval('#who', (e) => e.textContent);
  check(afterPassword === passkeyEmail, `the user shown after the password and the passkey: ${afterPassword}`);
  // A reload forgets the session (the page keeps its tokens in memory only); the passkey
  // alone signs in again.
  await pk.page.reload();
  await pk.page.waitForSelector('#signin-passkey');
  await pk.page.click('#signin-passkey');
  await pk.page.waitForSelector('nav a', { timeout: 15000 });
  const alone = await pk.page.$eval('#who', (e) => e.textContent);
  check(alone === passkeyEmail, `the user shown after the passkey alone: ${alone}`);
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  check(credentials.length === 1 && credentials[0].isResidentCredential, `the authenticator's passkeys: ${JSON.stringify(credentials.map((c) => [c.isResidentCredential, c.signCount]))}`);
  check(pk.seen.errors.length === 0, `errors in the page: ${pk.seen.errors.join(' | ')}`);
  await pk.context.close();
  console.log(`ok passkey sign-in: registered in the browser's authenticator (kept with the account), asked after the password ("Use a passkey"), then signing in alone ("Sign in with a passkey") as ${passkeyEmail}; ${credentials[0].signCount} signatures counted`);

  if (factorDomain) {
    step('second factor enrollment');
    // A member of the domain whose members must have a factor, with no grace period: its
    // sign-in is refused until it enrolls one, which the page does with the refusal's ticket.
    const vault = (await call('POST', '/api/domains/', admin, { name: factorDomain })).data;
    const member = (await call('POST', '/api/user/', admin, { email: enrollEmail, password: userPassword })).data;
    await call('POST', `/api/user/${member.id}/role/`, admin, { role: 'USER', domain_id: vault.id });
    const fifth = await signInPage();
    await fifth.page.fill('#signin-email', enrollEmail);
    await fifth.page.fill('#signin-password', userPassword);
    await fifth.page.click('form.signin button[type=submit]');
    await fifth.page.waitForSelector('#enroll-secret');
    const shown = await fifth.page.evaluate(() => [document.getElementById('enroll-secret').textContent, document.getElementById('enroll-url').textContent]);
    check(/^otpauth:\/\/totp\//.test(shown[1]) && shown[1].includes(`secret=${shown[0].replace(/\s/g, '')}`), `the key and address shown: ${JSON.stringify(shown)}`);
    const enrollKey = base32(shown[0]);
    const enrollAxe = await axeSerious(fifth.page);
    check(!enrollAxe, `axe on the enrollment's step: ${enrollAxe}`);
    await fifth.page.fill('#enroll-code', wrongCode(enrollKey));
    await fifth.page.click('#enroll-submit');
    await fifth.page.waitForFunction(() => document.getElementById('enroll-error')?.textContent.length > 0);
    await awayFromStepEnd(2);
    await fifth.page.fill('#enroll-code', totp(enrollKey, stepNow()));
    await fifth.page.click('#enroll-submit');
    await fifth.page.waitForSelector('#recovery-codes li');
    const codes = await fifth.page.$$eval('#recovery-codes li', (lis) => lis.map((li) => li.textContent));
    check(codes.length === 10 && new Set(codes).size === 10, `the recovery codes shown: ${JSON.stringify(codes)}`);
    await fifth.page.click('#recovery-continue');
    await fifth.page.waitForSelector('nav a', { timeout: 15000 });
    const enrolledWho = await fifth.page.$eval('#who', (e) => e.textContent);
    check(enrolledWho === enrollEmail, `the user shown: ${enrolledWho}`);
    const again = await fetch(`${base}/api/user/login/`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email: enrollEmail, password: userPassword }) });
    const againBody = await again.json();
    check(again.status === 401 && againBody.challenge?.kind === 'second_factor', `a password sign-in after enrolling: ${again.status} ${JSON.stringify(againBody.challenge)}`);
    check(fifth.seen.errors.length === 0, `errors in the page: ${fifth.seen.errors.join(' | ')}`);
    await fifth.context.close();
    console.log(`ok second factor enrollment: a member of ${factorDomain} refused until it enrolls; its key and otpauth address shown, a wrong code refused, confirmed, 10 recovery codes shown once, signed in; its password alone now asks for a code`);
  }
  console.log('admin e2e complete');
} catch (e) {
  failed = true;
  console.log(`FAILED ${current}: ${e.message}`);
  if (lastPage) {
    const shown = await lastPage.evaluate(() => `${location.hash}\n${document.body.innerText.slice(0, 1500)}`).catch(() => '');
    console.log(`the page showed: ${shown}`);
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
