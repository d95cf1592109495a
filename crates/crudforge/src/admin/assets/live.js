// Live refresh: when a resource offers a change feed (the `realtime` feature: a stream
// ticket operation and the Server-Sent Events feed), the open list reloads when a row
// changes. The ticket is single-use and short-lived, so no token ever goes into a URL.

import * as api from './api.js';

let current = null;

/** Stops following the feed the page follows, if any. */
export function stop() {
  if (current) current.close();
  current = null;
}

/** Follows `resource`'s feed while its list is shown; `changed` is called (debounced) on each change. */
export async function follow(ctx, resource, changed) {
  stop();
  if (!resource.can('events', ctx.admin) || !resource.can('ticket', ctx.admin) || typeof EventSource === 'undefined') return;
  const view = ctx.view;
  const hash = location.hash;
  let ticket;
  try {
    ticket = await api.ticket(resource.ops.ticket.path);
  } catch {
    return; // The list works without the feed.
  }
  if (!ticket || location.hash !== hash) return;
  const source = new EventSource(`${resource.ops.events.path}?ticket=${encodeURIComponent(ticket)}`);
  current = source;
  let timer = null;
  const onChange = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (location.hash === hash && document.contains(view)) changed();
      else stop();
    }, 250);
  };
  for (const kind of ['created', 'updated', 'deleted', 'restored', 'reset']) source.addEventListener(kind, onChange);
  source.addEventListener('end', () => stop());
  source.onerror = () => {
    // A ticket works once: the browser's own reconnection cannot use it again.
    if (source.readyState === EventSource.CLOSED || source.readyState === EventSource.CONNECTING) stop();
  };
  view.dataset.live = 'on';
  window.addEventListener('hashchange', stop, { once: true });
}
