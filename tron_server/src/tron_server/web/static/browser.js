// The agent's browser, live, in the web chat (a feature: see features.js).
//
// While the open session's browser runs, the server sends `browser.frame` (a JPEG of
// the page, at most 4 a second) and `browser.status` (its URL, title and the last
// action) to the clients subscribed to the session. This panel, above the composer,
// shows the latest frame with the URL and the last action; it can be folded to its
// bar. When the browser closes the panel says so and keeps the last picture until
// another session is opened. Nothing here is stored: the screenshots the model took are
// in the transcript (on their tool cards).

import { h } from "./dom.js";
import { registerToolView } from "./toolviews.js";

/** A Browser call in a few words: the action and what it acts on. */
export function browserSummary(a) {
  const target = a.url || a.ref || a.key || (a.values || []).join(", ") || a.text || (a.timeMs !== undefined ? `${a.timeMs} ms` : "");
  const extra = a.action === "type" && a.ref ? ` ← ${JSON.stringify(a.text || "")}${a.submit ? " ⏎" : ""}` : "";
  return `${a.action || ""} ${a.action === "type" ? a.ref || "" : target}${extra}`.trim();
}

export function install(app) {
  document.head.append(h("link", { rel: "stylesheet", href: "browser.css" }));
  registerToolView("Browser", { summary: browserSummary });
  /** session id → {open, url, title, action, frame} */
  const browsers = new Map();
  const url = h("span", { class: "browser-url mono", testid: "browser-url" });
  const action = h("span", { class: "browser-action", testid: "browser-action" });
  const state = h("span", { class: "browser-state", testid: "browser-state" });
  const toggle = h("button", { type: "button", class: "ghost small", testid: "browser-toggle", title: "Fold or unfold the browser" }, "Hide");
  const frame = h("img", { class: "browser-frame", testid: "browser-frame", alt: "What the agent's browser shows" });
  const bar = h("div", { class: "browser-bar" }, h("span", { class: "browser-label" }, "Browser"), state, url, action, toggle);
  const panel = h("section", { class: "browser-panel", testid: "browser-panel", hidden: true, "aria-label": "The agent's browser" }, bar, frame);
  let folded = false;
  toggle.addEventListener("click", () => {
    folded = !folded;
    render();
  });
  const slot = app.slot("composer-before");
  if (slot) slot.append(panel);

  function entry(sessionId) {
    if (!browsers.has(sessionId)) browsers.set(sessionId, { open: true, url: "", title: "", action: "", frame: null });
    return browsers.get(sessionId);
  }

  function render() {
    const b = browsers.get(app.state.subscribedId || app.state.currentId);
    panel.hidden = !b;
    if (!b) return;
    panel.dataset.state = b.open ? "open" : "closed";
    state.textContent = b.open ? "live" : "closed";
    url.textContent = b.url || "";
    url.title = b.title ? `${b.title} — ${b.url}` : b.url || "";
    action.textContent = b.action ? `· ${b.action}` : "";
    toggle.textContent = folded ? "Show" : "Hide";
    frame.hidden = folded || !b.frame;
    if (b.frame && frame.getAttribute("src") !== b.frame) frame.setAttribute("src", b.frame);
  }

  app.onNotification((method, params) => {
    const sessionId = params.sessionId;
    const data = params.data || {};
    if (!sessionId) return;
    if (method === "browser.frame") {
      const b = entry(sessionId);
      b.open = true;
      if (data.data) b.frame = `data:image/jpeg;base64,${data.data}`;
      if (data.url) b.url = data.url;
    } else if (method === "browser.status") {
      const b = entry(sessionId);
      b.open = Boolean(data.open);
      if (data.url) b.url = data.url;
      if (data.title !== undefined) b.title = data.title || "";
      if (data.action) b.action = data.action;
    } else {
      return;
    }
    if (sessionId === (app.state.subscribedId || app.state.currentId)) render();
  });

  // Another session opened: show its browser (if it has one), forget closed ones.
  const open = app.actions.open;
  app.actions.open = async (...args) => {
    const result = await open(...args);
    for (const [id, b] of browsers) if (!b.open && id !== app.state.currentId) browsers.delete(id);
    render();
    return result;
  };
  window.addEventListener("hashchange", () => setTimeout(render, 0));
}
