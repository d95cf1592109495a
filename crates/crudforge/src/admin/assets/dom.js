// Building the page: every element made with createElement, every value set as text.
// No HTML string is ever parsed, so a value such as <img src=x onerror=...> shows as text.

/**
 * Makes an element. `attrs` are set as attributes (or, for `on*` keys, as listeners; for
 * `dataset`, as data members); `children` are nodes, or strings added as text nodes.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (key === 'checked' || key === 'value' || key === 'selected' || key === 'indeterminate') {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

/** Appends nodes and strings (as text) to `el`, flattening arrays, skipping null. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Removes every child of `el`, then appends `children`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A value as the text a cell shows: JSON for objects, `—` for null. */
export function text(value) {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Announces `message` in the page's status line (a polite live region). */
export function say(message, kind = 'info') {
  const el = document.getElementById('status');
  if (!el) return;
  el.dataset.kind = kind;
  el.textContent = message;
}

let uid = 0;
/** A fresh id for label/input pairs. */
export function freshId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}
