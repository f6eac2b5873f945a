// Tron's memory of a folder, in the web chat (a feature: see features.js; docs/memory.md).
//
// - The Memory panel, below the session list: the open session's folder's ledger
//   (.tron/ledger.md, and the user's ~/.tron/ledger.md), its lessons and its latest
//   handoffs, each handoff linking to the event that holds it (memory.get). It is read
//   again when another session is opened and when the open one records a handoff or
//   writes the ledger.
// - Handoffs in the session list: a session that recorded a handoff carries a mark
//   whose title is the handoff's summary (memory.get of each folder listed, refreshed
//   as the list changes, at most once a few seconds per folder).

import { h, setChildren, fmtTime, basename } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

const REFRESH_MS = 5_000;

export function install(app) {
  document.head.append(h("link", { rel: "stylesheet", href: "memory.css" }));
  const title = h("span", { class: "memory-title", testid: "memory-title" }, "Memory");
  const toggle = h("button", { type: "button", class: "ghost small", testid: "memory-toggle", title: "Fold or unfold the memory panel" }, "Hide");
  const body = h("div", { class: "memory-body", testid: "memory-body" });
  const panel = h("section", { class: "memory-panel", testid: "memory-panel", hidden: true, "aria-label": "Memory of this folder" }, h("header", { class: "memory-bar" }, title, toggle), body);
  const slot = app.slot("sidebar-bottom");
  if (slot) slot.append(panel);
  let folded = false;
  toggle.addEventListener("click", () => {
    folded = !folded;
    toggle.textContent = folded ? "Show" : "Hide";
    body.hidden = folded;
  });

  /** folder → {at, data} */
  const byFolder = new Map();
  let shownFolder = null;

  async function load(folder, force = false) {
    const known = byFolder.get(folder);
    if (known && !force && Date.now() - known.at < REFRESH_MS) return known.data;
    try {
      const data = await app.rpc.call("memory.get", { workingDirectory: folder });
      byFolder.set(folder, { at: Date.now(), data });
      return data;
    } catch (err) {
      console.warn("tron: memory.get failed", err);
      return known ? known.data : null;
    }
  }

  function currentFolder() {
    const sd = app.current();
    return sd && sd.session ? sd.session.workingDirectory || null : null;
  }

  async function showPanel(force = false) {
    const folder = currentFolder();
    shownFolder = folder;
    if (!folder) {
      panel.hidden = true;
      return;
    }
    const data = await load(folder, force);
    if (shownFolder !== folder) return; // another session was opened meanwhile
    panel.hidden = !data;
    if (!data) return;
    title.textContent = `Memory · ${basename(folder)}`;
    setChildren(body, render(data));
    markSessions();
  }

  function render(data) {
    const parts = [];
    const settings = data.settings || {};
    if (settings.error) parts.push(h("p", { class: "memory-note error", testid: "memory-error" }, settings.error));
    const off = ["ledger", "handoffs", "lessons", "recall"].filter((k) => settings[k] === false);
    if (off.length) parts.push(h("p", { class: "memory-note muted small", testid: "memory-off" }, `Off here: ${off.join(", ")}`));
    parts.push(ledgerBlock(data.ledger, "Ledger", "memory-ledger"));
    if (data.userLedger && data.userLedger.exists) parts.push(ledgerBlock(data.userLedger, "Your ledger", "memory-user-ledger"));
    if ((data.patterns || []).length) {
      parts.push(
        h("h3", {}, "Lessons"),
        h("ul", { class: "memory-lessons", testid: "memory-lessons" }, data.patterns.slice(0, 8).map((p) => h("li", { testid: "memory-lesson" }, p.text, p.count > 1 ? h("span", { class: "muted small" }, ` ×${p.count}`) : null))),
      );
    }
    const handoffs = data.handoffs || [];
    parts.push(h("h3", {}, "Handoffs"));
    if (!handoffs.length) parts.push(h("p", { class: "muted small" }, "None yet: one is made when a session ends, on /handoff, or at a compaction."));
    else parts.push(h("ol", { class: "memory-handoffs", testid: "memory-handoffs" }, handoffs.map(handoffItem)));
    return parts;
  }

  function ledgerBlock(ledger, label, testid) {
    if (!ledger || !ledger.exists) {
      return h("div", { class: "memory-ledger", testid }, h("h3", {}, label), h("p", { class: "muted small" }, `No ledger yet (${ledger ? ledger.path : ".tron/ledger.md"}): it is written at the next compaction or session end.`));
    }
    return h("div", { class: "memory-ledger", testid, title: ledger.path }, h("h3", {}, label), h("div", { class: "md memory-ledger-text", testid: `${testid}-text` }, renderMarkdown(String(ledger.content || "").replace(/^#\s+ledger\s*\n/i, ""))));
  }

  function handoffItem(ho) {
    const link = h(
      "a",
      {
        href: `#s=${ho.sessionId}&e=${ho.eventId}`,
        testid: "memory-handoff",
        dataset: { sessionId: ho.sessionId, eventId: ho.eventId },
        onclick: (e) => {
          e.preventDefault();
          app.actions.open(ho.sessionId, { eventId: ho.eventId });
        },
      },
      ho.summary || "(no summary)",
    );
    const meta = [fmtTime(ho.timestamp), ho.trigger, ho.complete === false ? "summary only" : null].filter(Boolean).join(" · ");
    return h("li", {}, link, h("div", { class: "muted small" }, meta));
  }

  // -- marks in the session list --------------------------------------------------

  const list = document.getElementById("session-list");
  let marking = false;
  async function markSessions() {
    if (!list || marking) return;
    marking = true;
    try {
      const folders = [...list.querySelectorAll("[data-testid=workspace-group]")].map((s) => s.dataset.path).filter(Boolean);
      const summaries = new Map(); // session id → summaries
      for (const folder of folders) {
        const data = await load(folder);
        for (const ho of (data && data.handoffs) || []) {
          if (!summaries.has(ho.sessionId)) summaries.set(ho.sessionId, []);
          summaries.get(ho.sessionId).push(ho.summary || "");
        }
      }
      for (const item of list.querySelectorAll("[data-testid=session-item]")) {
        const found = summaries.get(item.dataset.sessionId);
        const mark = item.querySelector("[data-testid=handoff-mark]");
        if (!found) {
          if (mark) mark.remove();
          continue;
        }
        const text = `Handoff: ${found[0]}`;
        if (mark) mark.title = text;
        else item.querySelector(".session-title")?.append(h("span", { class: "handoff-mark", testid: "handoff-mark", title: text, "aria-label": "has a handoff" }, " ✎"));
      }
    } finally {
      marking = false;
    }
  }
  if (list) {
    // The list is rendered again as sessions change: put the marks back.
    new MutationObserver(() => {
      if (!marking) setTimeout(markSessions, 0);
    }).observe(list, { childList: true });
  }

  // -- when to read it again ------------------------------------------------------

  const open = app.actions.open;
  app.actions.open = async (...args) => {
    const result = await open(...args);
    showPanel(true); // read afresh: the list may have read this folder before its last change
    return result;
  };
  app.onNotification((method, params) => {
    const data = params.data || {};
    if (method === "events.new" && params.sessionId === app.state.subscribedId) {
      const memoryChanged = data.type === "memory.handoff" || data.type === "memory.loaded" || (data.type === "file.write" && data.payload && data.payload.source === "memory");
      if (memoryChanged) showPanel(true);
    } else if (method === "session.ended") {
      setTimeout(() => showPanel(true), 0);
    }
  });
}
