// Search across sessions: results grouped by session (best match first), one
// row per event with a readable snippet (a tool call's JSON arguments read as
// "command: …"). Arrow keys move through the results, Enter opens one, Escape
// closes the list.

import { h, setChildren, fmtTime, shortId, markedSnippet, basename } from "./dom.js";
import { sessionTitle } from "./sessions.js";

const TYPE_LABEL = { "message.user": "you", "message.assistant": "agent", "tool.call": "tool call", "tool.result": "tool result", "compact.summary": "summary" };

export function typeLabel(type) {
  return TYPE_LABEL[type] || type;
}

/**
 * A snippet made readable: JSON punctuation of tool arguments dropped
 * (`{"command":"echo «hi»"}` → `command: echo «hi»`), escapes undone, lines joined.
 */
export function readableSnippet(snippet) {
  return String(snippet || "")
    .replace(/\\n/g, " ")
    .replace(/\\"/g, '"')
    .replace(/"([\w-]+)":\s*/g, "$1: ")
    .replace(/"\s*,\s*(?=[\w-]+: )/g, " · ")
    .replace(/[{}[\]]/g, "")
    .replace(/(?<=: )"|"(?=\s*(?:·|\n|$))/g, "")
    .replace(/\s*\n+\s*/g, " · ")
    .replace(/\s{2,}/g, " ")
    .trim();
}

export class Search {
  /**
   * @param {{input: HTMLInputElement, box: HTMLElement, rpc: object, sessions: () => Map<string, object>,
   *          refreshSessions: () => Promise<void>, onOpen: (sessionId: string, eventId: string) => void}} opts
   */
  constructor({ input, box, rpc, sessions, refreshSessions, onOpen }) {
    Object.assign(this, { input, box, rpc, sessions, refreshSessions, onOpen });
    this.timer = null;
    this.seq = 0;
    input.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.run(), 200);
    });
    input.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.stopPropagation();
        e.preventDefault();
        this.close();
      } else if (e.key === "Enter") {
        e.preventDefault();
        clearTimeout(this.timer);
        const first = this.results()[0];
        if (first) first.click();
        else this.run();
      } else if (e.key === "ArrowDown") {
        e.preventDefault();
        this.results()[0]?.focus();
      }
    });
    box.addEventListener("keydown", (e) => {
      const rows = this.results();
      const at = rows.indexOf(document.activeElement);
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        const next = at + (e.key === "ArrowDown" ? 1 : -1);
        if (next < 0) input.focus();
        else rows[Math.min(next, rows.length - 1)]?.focus();
      } else if (e.key === "Escape") {
        e.preventDefault();
        e.stopPropagation();
        input.focus();
        this.close();
      }
    });
    document.addEventListener("click", (e) => {
      if (!e.target.closest(".search")) box.hidden = true;
    });
  }

  results() {
    return [...this.box.querySelectorAll("[data-testid=search-result]")];
  }

  close() {
    this.input.value = "";
    this.box.hidden = true;
    setChildren(this.box);
  }

  async run() {
    const query = this.input.value.trim();
    const box = this.box;
    if (!query) return this.close();
    const seq = ++this.seq;
    let hits;
    try {
      hits = (await this.rpc.call("events.search", { query, limit: 40 })).hits || [];
    } catch (err) {
      if (seq !== this.seq) return;
      setChildren(box, h("div", { class: "muted pad small" }, `Search failed: ${err.message}`));
      box.hidden = false;
      return;
    }
    if (seq !== this.seq) return;
    // Group by session, in the order of each session's best hit; one row per event.
    const groups = new Map();
    const seen = new Set();
    for (const hit of hits) {
      if (seen.has(hit.eventId)) continue;
      seen.add(hit.eventId);
      if (!groups.has(hit.sessionId)) groups.set(hit.sessionId, []);
      groups.get(hit.sessionId).push(hit);
    }
    let sessions = this.sessions();
    // A hit in a session this page has not seen (or seen before it had a title): list again.
    if ([...groups.keys()].some((id) => !sessions.get(id)?.title) && this.refreshSessions) {
      await this.refreshSessions();
      if (seq !== this.seq) return;
      sessions = this.sessions();
    }
    const nodes = [];
    for (const [sessionId, list] of groups) {
      const s = sessions.get(sessionId);
      const title = s ? sessionTitle(s) : `session …${shortId(sessionId)}`;
      nodes.push(
        h(
          "section",
          { class: "search-group", testid: "search-group", dataset: { sessionId }, "aria-label": title },
          h(
            "header",
            { class: "search-group-head" },
            h("span", { class: "search-group-title" }, title),
            h("span", { class: "muted" }, `${s ? basename(s.workingDirectory) : ""} · ${list.length} match${list.length === 1 ? "" : "es"}`),
          ),
          list.map((hit) => this._row(hit)),
        ),
      );
    }
    setChildren(box, nodes.length ? nodes : h("div", { class: "muted pad small", testid: "search-empty" }, `No match for “${query}”.`));
    box.hidden = false;
  }

  _row(hit) {
    const alsoIn = hit.alsoIn || [];
    return h(
      "button",
      {
        type: "button",
        class: "search-result",
        testid: "search-result",
        dataset: { eventId: hit.eventId, sessionId: hit.sessionId, type: hit.type },
        onclick: () => {
          this.close();
          this.onOpen(hit.sessionId, hit.eventId);
        },
      },
      h("span", { class: "hit-meta muted" }, `${typeLabel(hit.type)}${alsoIn.length ? ` + ${alsoIn.map((x) => typeLabel(x.type)).join(", ")}` : ""} · ${fmtTime(hit.timestamp)}`),
      h("span", { class: "hit-snippet", testid: "hit-snippet" }, markedSnippet(readableSnippet(hit.snippet))),
    );
  }
}
