// DOM helpers. Every piece of user or model text goes through text nodes
// (never innerHTML), so nothing a model says can become markup.

/**
 * Create an element. `attrs`: `class`, `testid` (→ data-testid), `dataset`,
 * `on<Event>` handlers, `style` (object), booleans (set when true) and plain
 * attributes. Children: strings (text nodes), nodes, arrays, null/false (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "testid") el.dataset.testid = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "style" && typeof value === "object") Object.assign(el.style, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

/** Append children (see `h`) to `el`. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace all children of `el`. */
export function setChildren(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/**
 * Make `parent`'s children exactly `wanted`, in order, moving existing nodes
 * instead of recreating them (so cached nodes keep their state).
 */
export function reconcile(parent, wanted) {
  for (let i = 0; i < wanted.length; i++) {
    const current = parent.children[i];
    if (current !== wanted[i]) parent.insertBefore(wanted[i], current || null);
  }
  while (parent.children.length > wanted.length) parent.lastElementChild.remove();
}

const numberFormat = new Intl.NumberFormat("en-US");

export function fmtInt(n) {
  return numberFormat.format(Math.round(Number(n) || 0));
}

/** Tokens: 950, 12.3k, 1.2M. */
export function fmtTokens(n) {
  n = Number(n) || 0;
  if (n < 1000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** Cost in US dollars; null/undefined means unknown (no price data). */
export function fmtCost(usd) {
  if (usd === null || usd === undefined || Number.isNaN(Number(usd))) return "–";
  usd = Number(usd);
  if (usd === 0) return "$0";
  if (usd < 0.0001) return "<$0.0001";
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

export function fmtDuration(ms) {
  if (ms === null || ms === undefined) return "";
  ms = Number(ms);
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** "14:03", or "Mar 3" for another day. */
export function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const now = new Date();
  if (d.toDateString() === now.toDateString()) {
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }
  return d.toLocaleDateString([], { month: "short", day: "numeric" });
}

export function shortId(id) {
  if (!id) return "";
  const bare = String(id).replace(/^[a-z]+_/, "");
  return bare.slice(-6);
}

export function basename(path) {
  if (!path) return "";
  const parts = String(path).replace(/[\\/]+$/, "").split(/[\\/]/);
  return parts[parts.length - 1] || path;
}

/** Text for a snippet with «marked» terms, as nodes with <mark>. */
export function markedSnippet(snippet) {
  const out = [];
  const re = /«([^»]*)»/g;
  let last = 0;
  let m;
  const s = String(snippet || "");
  while ((m = re.exec(s)) !== null) {
    if (m.index > last) out.push(s.slice(last, m.index));
    out.push(h("mark", {}, m[1]));
    last = m.index + m[0].length;
  }
  if (last < s.length) out.push(s.slice(last));
  return out;
}

const SVG_NS = "http://www.w3.org/2000/svg";
const ICONS = {
  fork: [["circle", { cx: 6, cy: 5, r: 2 }], ["circle", { cx: 6, cy: 19, r: 2 }], ["circle", { cx: 18, cy: 6, r: 2 }], ["path", { d: "M6 7v10M18 8c0 5-12 3-12 9" }]],
  rewind: [["path", { d: "M4 12a8 8 0 1 0 2.4-5.7" }], ["path", { d: "M4 4v4.5h4.5" }]],
};

/** A small stroke icon (inline SVG, no external file). */
export function icon(name) {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", `icon icon-${name}`);
  svg.setAttribute("aria-hidden", "true");
  for (const [tag, attrs] of ICONS[name] || []) {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    svg.append(el);
  }
  return svg;
}
