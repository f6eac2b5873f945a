// The session list: sessions grouped by working directory, most recently
// active first, sub-agent sessions nested under their parent, forks marked.

import { h, icon, setChildren, fmtCost, fmtTime, basename } from "./dom.js";

/**
 * A session's title: the one it was given, else (the server derives it) the
 * first line of its first prompt; a new, empty session shows when it started.
 */
export function sessionTitle(session) {
  if (session && session.title) return session.title;
  return `New session · ${fmtTime(session?.createdAt)}`;
}

export class SessionList {
  /**
   * @param {HTMLElement} container
   * @param {{sessions: Map<string, object>, currentId: string | null}} state
   */
  constructor(container, state) {
    this.container = container;
    this.state = state;
  }

  isChild(s) {
    return Boolean(s.parentSessionId) && !s.forkFromEventId && this.state.sessions.has(s.parentSessionId);
  }

  /** The most recently active sessions first. */
  sorted() {
    return [...this.state.sessions.values()].sort((a, b) => String(b.lastActivityAt).localeCompare(String(a.lastActivityAt)));
  }

  render() {
    const groups = new Map();
    const sessions = this.sorted();
    // Sub-agent sessions are listed under their parent (oldest first), not on their own.
    const children = new Map();
    for (const s of [...sessions].reverse()) {
      if (!this.isChild(s)) continue;
      if (!children.has(s.parentSessionId)) children.set(s.parentSessionId, []);
      children.get(s.parentSessionId).push(s);
    }
    for (const s of sessions) {
      if (this.isChild(s)) continue;
      const key = s.workingDirectory || "(unknown)";
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(s);
    }
    const nodes = [];
    for (const [dir, list] of groups) {
      nodes.push(
        h(
          "section",
          { class: "workspace", testid: "workspace-group", dataset: { path: dir }, "aria-label": dir },
          h("header", { class: "workspace-name", title: dir }, h("span", { class: "folder", "aria-hidden": "true" }, "▸"), basename(dir), h("span", { class: "muted path" }, dir)),
          list.map((s) => this._tree(s, children, 0)),
        ),
      );
    }
    if (!nodes.length) nodes.push(h("p", { class: "muted small pad" }, "No sessions yet."));
    setChildren(this.container, nodes);
  }

  _tree(s, children, depth, seen = new Set()) {
    const kids = seen.has(s.id) ? [] : children.get(s.id) || [];
    seen.add(s.id);
    const item = this._item(s, depth);
    if (!kids.length) return item;
    return h(
      "div",
      { class: "session-family", testid: "session-family", dataset: { sessionId: s.id } },
      item,
      h("div", { class: "session-children", testid: "session-children" }, kids.map((k) => this._tree(k, children, depth + 1, seen))),
    );
  }

  _item(s, depth = 0) {
    const active = s.id === this.state.currentId;
    const meta = [s.model, fmtTime(s.lastActivityAt)];
    if (s.cost) meta.push(fmtCost(s.cost));
    return h(
      "a",
      {
        class: `session-item ${active ? "active" : ""} ${s.status === "ended" ? "ended" : ""} ${depth ? "child" : ""}`,
        href: `#s=${s.id}`,
        testid: "session-item",
        dataset: { sessionId: s.id, kind: s.kind || "", parentSessionId: s.parentSessionId || "" },
        "aria-current": active ? "page" : null,
      },
      h(
        "span",
        { class: "session-title" },
        s.forkFromEventId ? h("span", { class: "fork-mark", title: "a fork" }, icon("fork")) : null,
        this.isChild(s) ? h("span", { class: "child-mark", title: "a sub-agent session (opened from its parent's Task call)" }, "↳ ") : null,
        sessionTitle(s),
      ),
      h("span", { class: "session-meta muted" }, meta.filter(Boolean).join(" · ")),
    );
  }
}
