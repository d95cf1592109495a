// The Jobs view, for administrators when the API mounts its jobs API (`Api::jobs_api`): the
// newest jobs (mails among them, with their recipient and subject) filtered by state or to the
// mails, Retry and Cancel where the job's state allows, and the schedules with "Run now".
// Every action is an ordinary request to the operations the description names (`listJobs`,
// `retryJob`, `cancelJob`, `listSchedules`, `runSchedule`).

import * as api from './api.js';
import { h, replace, say, text, freshId } from './dom.js';

/** The kind of the jobs that send mail. */
const MAIL_KIND = 'crudforge.mail';

/** The states a job can be in, as the API names them. */
const STATES = ['queued', 'running', 'done', 'failed', 'cancelled'];

/** The route of the view (no resource's key begins with `@`). */
export const JOBS_KEY = '@jobs';

/** What the view was showing, so that coming back keeps it. */
const st = { state: '', mails: false };

/** `path` with its `{name}` parameters filled from `values`. */
function fill(path, values) {
  return path.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(String(values[name])));
}

/** A time as the page shows it (local, to the second), or `—`. */
function when(value) {
  if (!value) return '—';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? text(value) : d.toLocaleString();
}

/** Shows the Jobs view in `ctx.view`; `jobs` are the operations (`ctx.model.jobs`). */
export function jobsView(ctx, jobs) {
  const stateId = freshId('jobs-state');
  const mailsId = freshId('jobs-mails');
  const stateSelect = h('select', { id: stateId },
    h('option', { value: '' }, 'Every state'),
    STATES.map((s) => h('option', { value: s, selected: s === st.state }, s)));
  const mailsBox = h('input', { id: mailsId, type: 'checkbox', checked: st.mails });
  const tableHolder = h('div', { class: 'table-wrap', id: 'jobs-table-wrap' });
  const schedulesHolder = h('div', { class: 'table-wrap', id: 'schedules-table-wrap' });

  const act = async (op, job, done) => {
    try {
      await api.send('POST', fill(op.path, { id: job.id }));
      say(done, 'ok');
      load();
    } catch (e) { say(e.message, 'error'); }
  };

  const row = (job) => {
    const mail = job.kind === MAIL_KIND;
    const detail = mail
      ? h('span', {}, h('span', { class: 'mail-to' }, text(job.to)), ' — ', h('span', { class: 'mail-subject' }, text(job.subject)))
      : text(job.payload === undefined ? null : job.payload);
    const actions = [];
    if (jobs.retryJob && (job.state === 'failed' || job.state === 'cancelled')) {
      actions.push(h('button', { type: 'button', class: 'secondary', 'aria-label': `Retry job ${job.id}`, dataset: { action: 'retry' },
        onclick: () => act(jobs.retryJob, job, `Job ${job.id} is queued again.`) }, 'Retry'));
    }
    if (jobs.cancelJob && job.state === 'queued') {
      actions.push(h('button', { type: 'button', class: 'danger', 'aria-label': `Cancel job ${job.id}`, dataset: { action: 'cancel' },
        onclick: () => act(jobs.cancelJob, job, `Job ${job.id} is cancelled.`) }, 'Cancel'));
    }
    return h('tr', { dataset: { id: String(job.id), state: job.state } },
      h('td', {}, text(job.id)),
      h('td', {}, mail ? 'mail' : text(job.kind)),
      h('td', {}, h('span', { class: `tag state-${job.state}` }, text(job.state))),
      h('td', {}, `${text(job.attempts)}/${text(job.max_attempts)}`),
      h('td', { class: 'job-error' }, text(job.last_error)),
      h('td', {}, when(job.run_at)),
      h('td', { class: 'job-detail' }, detail),
      h('td', {}, actions));
  };

  const load = async () => {
    const params = { state: st.state, kind: st.mails ? MAIL_KIND : '', limit: 200 };
    try {
      const a = await api.send('GET', jobs.listJobs.path, { params });
      const items = (a.body && a.body.items) || [];
      replace(tableHolder, items.length
        ? h('table', { id: 'jobs-table', 'aria-label': 'Jobs' },
          h('thead', {}, h('tr', {}, ['Id', 'Kind', 'State', 'Attempts', 'Last error', 'Run at', 'Recipient and subject, or payload', 'Actions']
            .map((c) => h('th', { scope: 'col' }, c)))),
          h('tbody', {}, items.map(row)))
        : h('p', { id: 'jobs-empty' }, 'No job.'));
    } catch (e) {
      replace(tableHolder, h('p', { class: 'error' }, e.message));
    }
    if (jobs.listSchedules) loadSchedules();
  };

  const loadSchedules = async () => {
    try {
      const a = await api.send('GET', jobs.listSchedules.path);
      const items = (a.body && a.body.items) || [];
      replace(schedulesHolder, h('table', { id: 'schedules-table', 'aria-label': 'Schedules' },
        h('thead', {}, h('tr', {}, ['Name', 'When (UTC)', 'Kind', 'Last tick', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, items.map((s) => h('tr', { dataset: { name: s.name } },
          h('td', {}, text(s.name)),
          h('td', {}, text(s.when)),
          h('td', {}, text(s.kind)),
          h('td', {}, when(s.last_tick)),
          h('td', {}, jobs.runSchedule ? h('button', { type: 'button', class: 'secondary', 'aria-label': `Run now: ${s.name}`, dataset: { action: 'run' },
            onclick: async () => {
              try {
                const r = await api.send('POST', fill(jobs.runSchedule.path, { name: s.name }));
                say(`Schedule ${s.name}: job ${r.body && r.body.id} is queued.`, 'ok');
                load();
              } catch (e) { say(e.message, 'error'); }
            } }, 'Run now') : null))))));
    } catch (e) {
      replace(schedulesHolder, h('p', { class: 'error' }, e.message));
    }
  };

  const apply = (event) => {
    if (event) event.preventDefault();
    st.state = stateSelect.value;
    st.mails = mailsBox.checked;
    load();
  };
  stateSelect.addEventListener('change', apply);
  mailsBox.addEventListener('change', apply);

  replace(ctx.view,
    h('h2', {}, 'Jobs'),
    h('form', { class: 'toolbar', id: 'jobs-filters', 'aria-label': 'Filter the jobs', onsubmit: apply },
      h('label', { for: stateId }, 'State', stateSelect),
      h('label', { for: mailsId, class: 'check' }, mailsBox, ' Mails only'),
      h('button', { type: 'submit', class: 'secondary', id: 'jobs-refresh' }, 'Refresh')),
    tableHolder,
    jobs.listSchedules ? [h('h3', {}, 'Schedules'), schedulesHolder] : null);
  load();
}
