// Reading the OpenAPI description: which resources there are, their members (types, required,
// defaults, validators, enums, read-only and write-only ones), relations, list parameters
// (sort keys, filters, named filters, member chooser, include_deleted) and operations, with
// the administrators-only marks (`x-admin-only`) the description carries, and the labels and
// columns a blueprint chose for this page (`x-admin` on its list operation). Nothing here is
// specific to one resource: the page is what the description says.


/** Resolves a `$ref` (local) in `doc`, once. */
function deref(doc, schema) {
  let s = schema || {};
  for (let i = 0; i < 8 && s.$ref; i += 1) {
    const path = s.$ref.replace(/^#\//, '').split('/');
    s = path.reduce((node, key) => (node ? node[key] : undefined), doc) || {};
  }
  return s;
}

/** The JSON schema of an operation's JSON body, or null. */
function bodySchema(doc, op) {
  const content = op && op.requestBody && op.requestBody.content;
  if (!content || !content['application/json']) return null;
  return deref(doc, content['application/json'].schema);
}

/** The JSON schema of an operation's first 2xx answer, or null. */
function answerSchema(doc, op) {
  if (!op || !op.responses) return null;
  const code = Object.keys(op.responses).find((c) => c.startsWith('2'));
  const content = code && op.responses[code].content;
  if (!content || !content['application/json']) return null;
  return deref(doc, content['application/json'].schema);
}

/** A label from a member or resource name: `cuteness_level` -> `Cuteness level`. */
export function humanize(name) {
  const words = String(name).replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_.]/g, ' ').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The `Default: `x`` the description states, parsed as JSON when it is JSON. */
function statedDefault(description) {
  const m = /Default: `([^`]*)`/.exec(description || '');
  if (!m) return undefined;
  try { return JSON.parse(m[1]); } catch { return m[1]; }
}

/** One member, from its property schema in the answer, create and update schemas. */
function member(doc, name, answerProp, createProp, updateProp, required) {
  const base = deref(doc, answerProp || createProp || updateProp);
  const input = deref(doc, createProp || updateProp || answerProp);
  const type = Array.isArray(base.type) ? base.type.find((t) => t !== 'null') : base.type;
  const file = type === 'object' && base.properties && 'url' in base.properties && 'size' in base.properties;
  return {
    name,
    label: humanize(name),
    type: type || 'json',
    format: base.format || input.format || null,
    nullable: Boolean(base.nullable || input.nullable),
    enum: input.enum || base.enum || null,
    minimum: input.minimum,
    maximum: input.maximum,
    minLength: input.minLength,
    maxLength: input.maxLength,
    pattern: input.pattern && input.pattern !== '^[^\\u0000]*$' ? input.pattern : null,
    description: input.description || base.description || '',
    default: statedDefault(input.description),
    required: Boolean(required),
    readable: Boolean(answerProp),
    creatable: Boolean(createProp),
    updatable: Boolean(updateProp),
    readOnly: Boolean(answerProp) && !createProp && !updateProp,
    writeOnly: !answerProp && Boolean(createProp || updateProp),
    adminOnly: Boolean((createProp && deref(doc, createProp)['x-admin-only']) || (updateProp && deref(doc, updateProp)['x-admin-only'])),
    file,
    // `admin` when only administrators read it (`x-crudforge-read`); absent for others.
    readRule: (answerProp && deref(doc, answerProp)['x-crudforge-read']) || null,
  };
}

/** The relations the `expand` parameter's description names. */
function relations(param) {
  const out = [];
  if (!param) return out;
  const re = /`(\w+)` \((one|a list of) (\w+), by (?:their )?`(\w+)`/g;
  let m;
  while ((m = re.exec(param.description || '')) !== null) {
    out.push({ name: m[1], many: m[2] !== 'one', target: m[3], key: m[4] });
  }
  return out;
}

/** The plain member names a `sort` parameter's pattern accepts. */
function sortKeys(param) {
  const m = param && param.schema && /\(\[\+-\]\?\(([^)]*)\)/.exec(param.schema.pattern || '');
  if (!m) return [];
  return m[1].split('|').filter((k) => !k.includes('\\.'));
}

/**
 * One operation, with who may call it: `x-admin-only`, or the description's "Who may call:"
 * sentence saying "administrators only" (a rule rather than a mark), and the member naming the
 * caller when only the row's own user (and administrators) may call it.
 */
function operation(path, method, op) {
  const who = /Who may call: ([^\n]*)/.exec(op.description || '');
  const sentence = who ? who[1] : '';
  const owner = /^signed-in users on the items where `(\w+)` is the caller's id; administrators on every item\./.exec(sentence);
  return {
    path,
    method,
    id: op.operationId,
    adminOnly: Boolean(op['x-admin-only']) || /^administrators only\b/.test(sentence),
    // The sentence itself, shown beside the data doors (their own access, when they have one).
    who: sentence.replace(/\.$/, ''),
    ownerKey: owner ? owner[1] : null,
    public: Boolean(op['x-public']),
    op,
  };
}

/** The operations of the jobs' API, which the Jobs view uses (not a resource's). */
const JOB_OPERATIONS = ['listJobs', 'retryJob', 'cancelJob', 'listSchedules', 'runSchedule'];

/**
 * The second factors' operations a sign-in uses: the step, its operation id, and its path
 * (the user blueprint's prefix, then what follows it).
 */
const FACTOR_OPERATIONS = [
  ['verify', /^verify[A-Z]\w*SecondFactor$/, /^(.*\/)factors\/verify\/$/],
  ['enroll', /^enroll[A-Z]\w*Totp$/, /^(.*\/)me\/factors\/totp\/$/],
  ['confirm', /^confirm[A-Z]\w*Factor$/, /^(.*\/)me\/factors\/\{[a-z_]+\}\/confirm\/$/],
  ['passkeyChallenge', /^challenge[A-Z]\w*Passkey$/, /^(.*\/)factors\/passkey\/challenge\/$/],
  ['passkeyVerify', /^verify[A-Z]\w*Passkey$/, /^(.*\/)factors\/passkey\/verify\/$/],
];

/** Reads the whole description into the page's model. */
export function readDescription(doc) {
  const byName = new Map();
  const ensure = (name) => {
    if (!byName.has(name)) byName.set(name, { name, ops: {} });
    return byName.get(name);
  };
  const auth = { login: null, refresh: null, logout: null, me: null, domain: false, providers: [], factors: null };
  // The sign-in providers' start and callback operations (the API's feature `providers`),
  // beside every user blueprint: `<prefix>providers/<name>/start/` and `.../callback/`.
  const providerOps = [];
  // The second factors' sign-in operations (the API's feature `factors`), beside every user
  // blueprint: `<prefix>factors/verify/`, `<prefix>me/factors/totp/` and its confirmation,
  // and the passkeys' `<prefix>factors/passkey/challenge/` and `verify/` when it has them.
  const factorOps = [];
  // The administrators' jobs API (`Api::jobs_api`), when the description has it.
  const jobs = {};
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== 'object' || !op.operationId) continue;
      const id = op.operationId;
      const o = operation(path, method.toUpperCase(), op);
      if (/^login[A-Z]/.test(id) && path.endsWith('/login/')) {
        auth.login = path;
        const body = bodySchema(doc, op);
        auth.domain = Boolean(body && body.properties && body.properties.domain);
      } else if (/^refresh\w+Tokens$/.test(id)) auth.refresh = path;
      else if (/^logout[A-Z]/.test(id)) auth.logout = path;
      else if (/^getCurrent[A-Z]/.test(id)) auth.me = path;
      if (JOB_OPERATIONS.includes(id)) { jobs[id] = o; continue; }
      const factor = FACTOR_OPERATIONS.find(([, named, at]) => named.test(id) && at.test(path));
      if (factor && method.toUpperCase() === 'POST') {
        factorOps.push({ step: factor[0], prefix: factor[2].exec(path)[1], path });
        continue;
      }
      if (/^(start|finish)[A-Z]\w*SignInWith[A-Z]\w*$/.test(id)) {
        const at = /^(.*\/)providers\/([^/]+)\/(start|callback)\/$/.exec(path);
        if (at && method.toUpperCase() === 'POST') providerOps.push({ prefix: at[1], name: at[2], step: at[3], path });
        continue;
      }
      let m = /^(list|get|create|update|delete|restore)([A-Z]\w*)$/.exec(id);
      if (m && !/StreamTicket$/.test(id)) {
        const verb = m[1];
        const target = ensure(m[2]);
        target.ops[verb] = o;
        continue;
      }
      m = /^batch(Create|Update|Delete)([A-Z]\w*)$/.exec(id);
      if (m) { ensure(m[2]).ops[`batch${m[1]}`] = o; continue; }
      m = /^(aggregate|export|import)([A-Z]\w*)$/.exec(id);
      if (m) { ensure(m[2]).ops[m[1]] = o; continue; }
      m = /^stream([A-Z]\w*)Events$/.exec(id);
      if (m) { ensure(m[1]).ops.events = o; continue; }
      m = /^create([A-Z]\w*)StreamTicket$/.exec(id);
      if (m) { ensure(m[1]).ops.ticket = o; continue; }
      m = /^link([A-Z]\w*)File$/.exec(id);
      if (m) { ensure(m[1]).ops.fileLink = o; continue; }
      m = /^download([A-Z]\w*)File$/.exec(id);
      if (m) ensure(m[1]).ops.download = o;
    }
  }
  auth.providers = signInProviders(auth.login, providerOps);
  auth.factors = signInFactors(auth.login, factorOps);
  const resources = [];
  for (const r of byName.values()) {
    const list = r.ops.list;
    if (!list) continue;
    const envelope = answerSchema(doc, list.op);
    if (!envelope || !envelope.properties || !envelope.properties.data || !envelope.properties.pagination) continue;
    resources.push(resource(doc, r, envelope));
  }
  for (const r of resources) {
    r.relations = r.relations.map((rel) => ({ ...rel, resource: resources.find((x) => x.name === rel.target && !x.parent) || null }));
    for (const m of r.members) {
      const rel = r.relations.find((x) => !x.many && x.key === m.name);
      if (rel) m.relation = rel;
    }
  }
  const top = resources.filter((r) => !r.parent);
  const users = auth.login ? top.find((r) => auth.login.startsWith(r.path)) || null : null;
  if (users) {
    users.children = resources.filter((r) => r.parent && r.path.startsWith(users.path));
    users.isUsers = true;
    users.label = 'Users';
  }
  // The Token resource with its `scopes` (the library's API keys): the API keys view.
  const keys = top.find((r) => r.name === 'Token' && r.members.some((m) => m.name === 'scopes') && r.members.some((m) => m.name === 'kind')) || null;
  if (keys) {
    keys.isKeys = true;
    keys.label = 'API keys';
  }
  return { title: (doc.info && doc.info.title) || 'API', auth, resources: top, users, keys, all: resources, jobs: jobs.listJobs ? jobs : null };
}

/**
 * The providers one signs in with beside the user blueprint whose `login/` is at `login`:
 * `[{name, start, callback}]`, each with both operations, in the description's order.
 */
function signInProviders(login, ops) {
  if (!login) return [];
  const prefix = login.slice(0, -'login/'.length);
  const found = new Map();
  for (const o of ops) {
    if (o.prefix !== prefix) continue;
    if (!found.has(o.name)) found.set(o.name, { name: o.name, start: null, callback: null });
    found.get(o.name)[o.step] = o.path;
  }
  return [...found.values()].filter((p) => p.start && p.callback);
}

/**
 * The second factors' sign-in steps beside the user blueprint whose `login/` is at `login`:
 * `{verify, enroll, confirm, passkeyChallenge, passkeyVerify}` (paths; all but `verify` may be
 * null: the passkeys' when the API has none), or null when the description has no
 * `factors/verify/` there.
 */
function signInFactors(login, ops) {
  if (!login) return null;
  const prefix = login.slice(0, -'login/'.length);
  const found = { verify: null, enroll: null, confirm: null, passkeyChallenge: null, passkeyVerify: null };
  for (const o of ops) if (o.prefix === prefix) found[o.step] = o.path;
  return found.verify ? found : null;
}

/** Where a member goes among the columns: naming members first, the base fields last. */
function rank(m) {
  if (['name', 'title', 'email', 'label'].includes(m.name)) return 0;
  if (m.name === 'id') return 3;
  if (['created_at', 'updated_at', 'deleted_at'].includes(m.name)) return 4;
  return m.required ? 1 : 2;
}

function resource(doc, r, envelope) {
  const list = r.ops.list;
  const params = new Map((list.op.parameters || []).map((p) => [deref(doc, p).name, deref(doc, p)]));
  const item = deref(doc, deref(doc, envelope.properties.data).items);
  const full = r.ops.get ? answerSchema(doc, r.ops.get.op) : null;
  const answerProps = { ...(item.properties || {}), ...((full && full.properties) || {}) };
  const create = r.ops.create ? bodySchema(doc, r.ops.create.op) : null;
  const update = r.ops.update ? bodySchema(doc, r.ops.update.op) : null;
  const createProps = (create && create.properties) || {};
  const updateProps = (update && update.properties) || {};
  const required = new Set((create && create.required) || []);
  const names = [...new Set([...Object.keys(answerProps), ...Object.keys(createProps), ...Object.keys(updateProps)])];
  const fields = params.get('fields');
  const chooser = fields && fields.schema && fields.schema.items && fields.schema.items.enum
    ? fields.schema.items.enum.filter((n) => !n.includes('.')) : [];
  const relationList = relations(params.get('expand'));
  const members = names
    .filter((n) => !relationList.some((rel) => rel.name === n))
    .map((n) => member(doc, n, answerProps[n], createProps[n], updateProps[n], required.has(n)))
    .sort((a, b) => rank(a) - rank(b));
  const filters = new Map();
  for (const name of params.keys()) {
    const [field, op] = name.split('__');
    if (!members.some((m) => m.name === field)) continue;
    if (!filters.has(field)) filters.set(field, []);
    filters.get(field).push(op || 'eq');
  }
  // The blueprint's hints (`x-admin`): its label, its list's columns, its members' labels.
  const hints = list.op['x-admin'] || {};
  for (const m of members) {
    if (hints.labels && typeof hints.labels[m.name] === 'string') m.label = hints.labels[m.name];
  }
  const path = list.path;
  const segments = path.split('/').filter(Boolean);
  const key = segments.filter((s) => !s.startsWith('{')).slice(-1)[0] || r.name.toLowerCase();
  const scope = params.get('scope');
  // File members a create or update may upload (multipart bodies), with the types accepted.
  for (const m of members) {
    if (!m.file) continue;
    for (const verb of ['create', 'update']) {
      const content = r.ops[verb] && r.ops[verb].op.requestBody && r.ops[verb].op.requestBody.content;
      const multipart = content && content['multipart/form-data'];
      if (multipart && multipart.schema && multipart.schema.properties && multipart.schema.properties[m.name]) {
        m.upload = m.upload || {};
        m.upload[verb] = true;
        m.accept = (multipart.encoding && multipart.encoding[m.name] && multipart.encoding[m.name].contentType) || '';
      }
    }
  }
  const res = {
    name: r.name,
    key,
    label: typeof hints.label === 'string' ? hints.label : humanize(key),
    columns: Array.isArray(hints.columns) ? hints.columns : null,
    path,
    parent: path.includes('{'),
    ops: r.ops,
    members,
    chooser,
    sortable: sortKeys(params.get('sort')),
    filters,
    textMembers: members.filter((m) => m.type === 'string' && !m.format && !m.enum && (filters.get(m.name) || []).includes('ilike')).map((m) => m.name),
    // Named filters: the `scope` parameter's names (an enum, or the enum of its items).
    scopes: (scope && scope.schema && (scope.schema.enum || (scope.schema.items && scope.schema.items.enum))) || [],
    includeDeleted: params.has('include_deleted'),
    softDelete: Boolean(r.ops.restore) || params.has('include_deleted'),
    hasFilterExpression: params.has('filter'),
    relations: relationList,
    children: [],
  };
  /** Whether the caller may perform operation `verb` (it exists; administrators' only ones for administrators). */
  res.can = (verb, admin) => Boolean(res.ops[verb]) && (!res.ops[verb].adminOnly || admin);
  /** The members the caller may see (an administrators-only member is absent for others). */
  res.shown = (admin) => res.members.filter((m) => admin || (m.readRule !== 'admin' && !(m.adminOnly && !m.readable)));
  /** Whether the caller may perform `verb` on `row` (rules that name the row's own user). */
  res.canRow = (verb, admin, row, me) => res.can(verb, admin)
    && (admin || !res.ops[verb].ownerKey || (row && me && row[res.ops[verb].ownerKey] === me.id));
  /** Whether anything of the resource is open to the caller. */
  res.visible = (admin) => res.can('list', admin);
  /** The item path of `id`. */
  res.itemPath = (verb, id, parentId) => {
    const op = res.ops[verb];
    if (!op) return null;
    return op.path.replace(/\{id\}/, encodeURIComponent(id)).replace(/\{[a-z_]+\}/, encodeURIComponent(parentId || ''));
  };
  res.collectionPath = (parentId) => res.path.replace(/\{[a-z_]+\}/, encodeURIComponent(parentId || ''));
  return res;
}

/**
 * Whether the signed-in user is a global administrator (a SUPERADMIN role, or an ADMIN role for
 * every domain), from role grants given as objects (`[{"role": "ADMIN", "domain_id": null}]`):
 * `true` or `false`. From grants given as names only (`["ADMIN"]`, as a user presentation may
 * give them), a SUPERADMIN decides it, no ADMIN at all decides it, and an ADMIN leaves it
 * `undefined`: the name does not say whether the grant holds in every domain or in one.
 * Only the page's choice of what to offer depends on it; the API decides what is allowed.
 */
export function isAdmin(me) {
  return adminOf((me && me.roles) || []);
}

function adminOf(roles) {
  let unknown = false;
  for (const r of roles) {
    if (typeof r === 'string') {
      if (r === 'SUPERADMIN') return true;
      if (r === 'ADMIN') unknown = true;
    } else if (r && (r.role === 'SUPERADMIN' || (r.role === 'ADMIN' && (r.domain_id === null || r.domain_id === undefined)))) {
      return true;
    }
  }
  return unknown ? undefined : false;
}

/**
 * Whether the signed-in user `me` is a global administrator, reading its role rows (the user
 * resource's nested role list, which every user may read for themselves) when `me/` gives the
 * roles by name only. A domain's administrator is then not offered what only global
 * administrators may do; when the rows cannot be read, nothing that needs an administrator is
 * offered.
 */
export async function adminStatus(model, me, send) {
  const known = isAdmin(me);
  if (known !== undefined) return known;
  const roles = model.users && model.users.children.find((c) => /Role$/.test(c.name));
  if (!roles || !me || !me.id) return false;
  try {
    const answer = await send('GET', roles.collectionPath(me.id), { params: { page_size: 100 } });
    return adminOf((answer.body && answer.body.data) || []) === true;
  } catch {
    return false;
  }
}
