// The user in the loop, in the web chat: the agent's questions and tool approvals
// (agent.question / agent.approval, answered with agent.respond), the session's
// permission mode (session.setMode), and slash-command completion (command.list).
//
// app.js creates one Interaction and tells it when a session is attached, passes it
// every notification first, and hands it agent.message's result. Everything else
// (its elements, keys and styles) lives here.
//
// Keys: on an approval, Enter allows once and Esc denies (with the reason typed, if
// any); a question's options are buttons (several, with Send, for multiSelect) and
// a text field takes any other answer. In the composer, "/" opens the command list:
// ↑/↓ choose, Tab or Enter complete, Esc closes; Shift+Tab cycles the mode.

import { h, setChildren } from "./dom.js";
import { parseUnifiedDiff, renderDiff } from "./diff.js";
import { renderArgs } from "./toolviews.js";

const MODE_LABELS = {
  default: "Ask before changes",
  acceptEdits: "Accept edits",
  plan: "Plan (read-only)",
  dontAsk: "Don't ask (refuse)",
  bypassPermissions: "Bypass permissions",
};

function shortJson(value) {
  if (value && typeof value === "object" && typeof value.command === "string") return value.command;
  const text = JSON.stringify(value, null, 2) ?? "";
  return text.length > 1200 ? `${text.slice(0, 1200)}…` : text;
}

/** What a bare rule covers, said on the "allow always" button. */
const RULE_SCOPES = { Edit: "every file edit", Read: "every file read" };

/**
 * What an approved call would do: the diff an Edit or Write makes to the file on
 * disk (the server's preview), else the tool's own view of its arguments (a Bash
 * command as it is), never raw JSON where a view exists.
 */
function approvalBody(request, cwd) {
  const preview = request.preview;
  if (preview && preview.diff) {
    return renderDiff(parseUnifiedDiff(preview.diff), { path: preview.path, note: preview.status === "added" ? "new file" : null });
  }
  const input = request.input;
  if (input && typeof input === "object" && typeof input.command === "string") return h("pre", { class: "code" }, input.command);
  if (input && typeof input === "object") return renderArgs(request.toolName, input, { cwd });
  return h("pre", { class: "code" }, shortJson(input));
}

export class Interaction {
  /**
   * @param {object} o
   * @param {import("./rpc.js").RpcClient} o.rpc
   * @param {(message: string, kind?: string) => void} o.toast
   * @param {() => string | null} o.sessionId  the session the page follows
   * @param {(id: string) => void} o.openSession
   * @param {() => string | null} [o.cwd]  the working directory paths are shown relative to
   */
  constructor({ rpc, toast, sessionId, openSession, cwd = () => null }) {
    this.rpc = rpc;
    this.cwd = cwd;
    this.toast = toast;
    this.sessionId = sessionId;
    this.openSession = openSession;
    /** @type {Map<string, object>} requestId → request, in arrival order */
    this.pending = new Map();
    this.commands = [];
    /** @type {Array<{name: string, description: string, mention: true}>} @server:uri completions */
    this.mentions = [];
    this.matches = [];
    this.highlighted = 0;
    this.modes = null;
    this.mode = null;

    document.head.append(h("link", { rel: "stylesheet", href: "interaction.css" }));
    this.panel = h("section", { class: "request-panel", testid: "request-prompt", hidden: true, "aria-live": "assertive" });
    this.output = h("section", { class: "command-output", testid: "command-output", hidden: true });
    this.menu = h("div", { class: "command-menu", testid: "command-menu", role: "listbox", hidden: true });
    this.modeSelect = h("select", { testid: "mode-select", title: "Permission mode (Shift+Tab in the message box cycles)", onChange: (e) => this.setMode(e.target.value) });
    const composer = document.getElementById("composer");
    composer.before(this.panel, this.output);
    composer.prepend(this.menu);
    const tools = document.querySelector(".header-tools");
    const picker = h("label", { class: "mode-picker" }, h("span", { class: "sr-only" }, "Permission mode"), this.modeSelect);
    if (tools) tools.prepend(picker);
    else composer.before(picker);

    this.input = document.getElementById("composer-input");
    // Capture: these run before app.js's own handlers on the same element and document.
    this.input.addEventListener("keydown", (e) => this.onComposerKey(e), { capture: true });
    this.input.addEventListener("input", () => this.updateMenu());
    this.input.addEventListener("blur", () => setTimeout(() => this.hideMenu(), 150));
    document.addEventListener("keydown", (e) => this.onDocumentKey(e), { capture: true });
  }

  // -- session lifecycle --------------------------------------------------------------

  /** A session was attached (or re-attached after a reconnect). */
  attached(sessionId, session, snapshot) {
    this.pending.clear();
    for (const request of snapshot?.pendingRequests || []) this.pending.set(request.requestId, request);
    this.setModeShown(session?.permissionMode);
    this.renderPanel();
    this.loadCommands(sessionId);
    this.loadModes();
  }

  async loadCommands(sessionId) {
    try {
      const res = await this.rpc.call("command.list", { sessionId });
      const sorted = [...(res.commands || [])].sort((a, b) => a.name.localeCompare(b.name));
      if (sessionId === this.sessionId()) this.commands = sorted;
    } catch {
      this.commands = [];
    }
    // "@" completes MCP resources (@server:uri) the servers listed; none is started for it.
    try {
      const res = await this.rpc.call("mcp.list", { sessionId, connect: false });
      const mentions = (res.servers || []).flatMap((s) => (s.resources || []).map((r) => ({
        name: String(r.mention || "").replace(/^@/, ""), description: r.name || r.description || "", mention: true,
      }))).filter((m) => m.name);
      if (sessionId === this.sessionId()) this.mentions = mentions;
    } catch {
      this.mentions = [];
    }
    // A "/" typed before the list arrived opens the menu now, not at the next key.
    if (document.activeElement === this.input) this.updateMenu();
  }

  async loadModes() {
    if (this.modes) return this.renderModes();
    try {
      const res = await this.rpc.call("mode.list", {});
      this.modes = res.modes || [];
    } catch {
      this.modes = [];
    }
    this.renderModes();
  }

  // -- notifications ------------------------------------------------------------------

  /** Handle a notification; true when it needs nothing more from app.js. */
  onNotification(method, sessionId, data) {
    const current = this.sessionId();
    const ours = sessionId === current || (current && data.parentSessionId === current);
    if (method === "session.notification") {
      const body = data.body ? `: ${data.body}` : "";
      this.toast(`${data.title}${body}`, data.urgency === "high" ? "error" : "info");
      return true;
    }
    if (method === "session.mode_changed") {
      if (sessionId === current) this.setModeShown(data.mode);
      return false; // app.js still takes the session object
    }
    if (!ours) return method === "agent.question" || method === "agent.approval" || method === "agent.request_resolved";
    if (method === "agent.question" || method === "agent.approval") {
      this.pending.set(data.requestId, { ...data, sessionId: data.sessionId || sessionId });
      this.renderPanel();
      return true;
    }
    if (method === "agent.request_resolved") {
      const shown = this.shown();
      this.pending.delete(data.requestId);
      if (shown && shown.requestId === data.requestId && !this.answering) {
        this.toast(data.outcome === "answered" ? "Answered in another window." : `The request ended: ${data.outcome}.`);
      }
      this.answering = false;
      this.renderPanel();
      return true;
    }
    if (method === "agent.command_output") return true; // the sender shows agent.message's result
    return false;
  }

  /** agent.message's result: a built-in command's output (or the new session of /fork). */
  messageResult(res) {
    if (!res || !res.builtin) return;
    if (res.command === "fork" && res.session) {
      this.toast(res.output || "Forked.");
      this.openSession(res.session.id);
      return;
    }
    if (res.command === "mode" && res.mode) this.setModeShown(res.mode);
    const text = String(res.output || "");
    if (!text.includes("\n")) {
      if (text) this.toast(text);
      return;
    }
    setChildren(
      this.output,
      h("div", { class: "command-output-head" }, h("strong", {}, `/${res.command}`),
        h("button", { type: "button", class: "ghost", testid: "command-output-close", onClick: () => { this.output.hidden = true; } }, "Close")),
      h("pre", { testid: "command-output-text" }, text),
    );
    this.output.hidden = false;
  }

  // -- the request prompt ---------------------------------------------------------------

  shown() {
    return this.pending.values().next().value || null;
  }

  renderPanel() {
    const request = this.shown();
    this.panel.hidden = !request;
    if (!request) return setChildren(this.panel);
    const from = request.parentSessionId ? h("span", { class: "muted small" }, " · from a sub-agent") : null;
    const more = this.pending.size > 1 ? h("span", { class: "muted small" }, ` · ${this.pending.size - 1} more waiting`) : null;
    this.panel.dataset.kind = request.kind;
    this.panel.dataset.requestId = request.requestId;
    if (request.kind === "approval") this.renderApproval(request, from, more);
    else this.renderQuestion(request, from, more);
  }

  renderApproval(request, from, more) {
    const reason = h("input", { class: "reason", testid: "deny-reason", placeholder: "Reason for denying (optional; the agent sees it)" });
    reason.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        e.stopPropagation();
        this.answer(request, { decision: "deny", reason: reason.value || undefined });
      }
    });
    const scope = RULE_SCOPES[request.suggestion];
    const always = request.suggestion ? `Allow always: ${request.suggestion}${scope ? ` (${scope})` : ""}` : "Allow always (this session)";
    setChildren(
      this.panel,
      h("div", { class: "request-head" }, h("strong", {}, `Allow ${request.toolName}?`), from, more),
      request.reason ? h("div", { class: "muted small", testid: "approval-reason" }, request.reason) : null,
      h("div", { class: "request-input", testid: "approval-input" }, approvalBody(request, this.cwd())),
      h("div", { class: "request-actions" },
        h("button", { type: "button", class: "primary", testid: "approve-btn", onClick: () => this.answer(request, { decision: "allow" }) }, "Allow", h("kbd", {}, "Enter")),
        h("button", { type: "button", testid: "approve-always-btn", onClick: () => this.answer(request, { decision: "allow_always" }) }, always),
        h("button", { type: "button", class: "danger", testid: "deny-btn", onClick: () => this.answer(request, { decision: "deny", reason: reason.value || undefined }) }, "Deny", h("kbd", {}, "Esc")),
        reason,
      ),
    );
    this.panel.querySelector("[data-testid=approve-btn]").focus({ preventScroll: true });
  }

  renderQuestion(request, from, more) {
    const options = request.options || [];
    const chosen = new Set();
    const text = h("input", { class: "answer", testid: "answer-input", placeholder: options.length ? "Or answer in your own words, Enter sends" : "Your answer, Enter sends" });
    text.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && text.value.trim()) {
        e.preventDefault();
        e.stopPropagation();
        this.answer(request, request.multiSelect ? [text.value.trim()] : text.value.trim());
      }
    });
    const buttons = options.map((label, i) =>
      h("button", {
        type: "button",
        class: "option",
        testid: "answer-option",
        dataset: { index: String(i) },
        "aria-pressed": "false",
        onClick: (e) => {
          if (!request.multiSelect) return this.answer(request, label);
          if (chosen.has(label)) chosen.delete(label);
          else chosen.add(label);
          e.currentTarget.setAttribute("aria-pressed", String(chosen.has(label)));
        },
      }, label),
    );
    setChildren(
      this.panel,
      h("div", { class: "request-head" }, h("strong", {}, request.question), from, more),
      buttons.length ? h("div", { class: "request-options" }, buttons) : null,
      h("div", { class: "request-actions" }, text,
        request.multiSelect
          ? h("button", { type: "button", class: "primary", testid: "answer-send", onClick: () => this.answer(request, options.filter((o) => chosen.has(o))) }, "Send")
          : null),
    );
    (buttons[0] || text).focus({ preventScroll: true });
  }

  async answer(request, answer) {
    this.answering = true;
    try {
      await this.rpc.call("agent.respond", { sessionId: this.sessionId() || request.sessionId, requestId: request.requestId, answer });
      this.pending.delete(request.requestId);
      this.renderPanel();
    } catch (err) {
      this.answering = false;
      this.toast(`The answer was not taken: ${err.message}`, "error");
      if (err.code === -32004) {
        this.pending.delete(request.requestId);
        this.renderPanel();
      }
    }
  }

  onDocumentKey(e) {
    const request = this.shown();
    if (!request || request.kind !== "approval" || this.panel.hidden) return;
    const inComposer = document.activeElement === this.input;
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopImmediatePropagation(); // deny, rather than abort the turn
      const reason = this.panel.querySelector("[data-testid=deny-reason]")?.value;
      this.answer(request, { decision: "deny", reason: reason || undefined });
    } else if (e.key === "Enter" && !inComposer && !e.shiftKey && !e.target.closest?.("input, textarea, button, select")) {
      e.preventDefault();
      e.stopImmediatePropagation();
      this.answer(request, { decision: "allow" });
    }
  }

  // -- permission mode ------------------------------------------------------------------

  setModeShown(mode) {
    if (mode) this.mode = mode;
    this.renderModes();
  }

  renderModes() {
    const modes = (this.modes || []).filter((m) => m.available || m.id === this.mode);
    const sig = `${modes.map((m) => m.id).join(",")}|${this.mode}`;
    if (this.modeSelect.dataset.sig !== sig) {
      this.modeSelect.dataset.sig = sig;
      setChildren(this.modeSelect, modes.map((m) => h("option", { value: m.id, title: m.description }, MODE_LABELS[m.id] || m.id)));
    }
    if (this.mode) this.modeSelect.value = this.mode;
    this.modeSelect.closest("label").hidden = !modes.length;
  }

  async setMode(mode) {
    const sessionId = this.sessionId();
    if (!sessionId || !mode) return;
    try {
      const res = await this.rpc.call("session.setMode", { sessionId, mode });
      this.setModeShown(res.mode);
      this.toast(`Mode: ${MODE_LABELS[res.mode] || res.mode}`);
    } catch (err) {
      this.toast(`The mode was not changed: ${err.message}`, "error");
      this.renderModes();
    }
  }

  cycleMode() {
    const cycle = (this.modes || []).filter((m) => m.cycle && m.available).map((m) => m.id);
    if (!cycle.length) return;
    const at = cycle.indexOf(this.mode || "default");
    this.setMode(cycle[(at + 1) % cycle.length]);
  }

  // -- slash-command completion -----------------------------------------------------

  /** The "@word" typed at the end of the input (without "@"), or null. */
  mentionWord() {
    const found = /(?:^|\s)@(\S*)$/.exec(this.input.value);
    return found ? found[1] : null;
  }

  updateMenu() {
    const value = this.input.value;
    const word = value.startsWith("/") ? null : this.mentionWord();
    const pool = word !== null ? this.mentions || [] : this.commands;
    if (word === null && (!value.startsWith("/") || /\s/.test(value))) return this.hideMenu();
    if (!pool.length) return this.hideMenu();
    const prefix = (word !== null ? word : value.slice(1)).toLowerCase();
    const starts = pool.filter((c) => c.name.toLowerCase().startsWith(prefix));
    const contains = pool.filter((c) => !starts.includes(c) && c.name.toLowerCase().includes(prefix));
    this.matches = [...starts, ...contains];
    if (!this.matches.length) return this.hideMenu();
    this.highlighted = Math.min(this.highlighted, this.matches.length - 1);
    setChildren(
      this.menu,
      this.matches.map((c, i) =>
        h("div", {
          class: "command-item",
          role: "option",
          testid: "command-item",
          "aria-selected": String(i === this.highlighted),
          dataset: { name: c.name },
          onMousedown: (e) => {
            e.preventDefault();
            this.complete(c);
          },
        },
        h("span", { class: "command-name" }, `${c.mention ? "@" : "/"}${c.name}`),
        c.argumentHint ? h("span", { class: "command-hint" }, ` ${c.argumentHint}`) : null,
        h("span", { class: "command-desc" }, c.description || "")),
      ),
    );
    this.menu.hidden = false;
    this.menu.children[this.highlighted]?.scrollIntoView({ block: "nearest" });
  }

  hideMenu() {
    this.menu.hidden = true;
    this.matches = [];
    this.highlighted = 0;
  }

  complete(command) {
    if (command.mention) {
      const word = this.mentionWord() || "";
      const value = this.input.value;
      this.input.value = `${value.slice(0, value.length - word.length - 1)}@${command.name} `;
    } else this.input.value = `/${command.name}${command.argumentHint ? " " : ""}`;
    this.hideMenu();
    this.input.focus();
    this.input.dispatchEvent(new Event("input"));
  }

  onComposerKey(e) {
    if (e.key === "Tab" && e.shiftKey) {
      e.preventDefault();
      e.stopImmediatePropagation();
      this.cycleMode();
      return;
    }
    if (this.menu.hidden || !this.matches.length) return;
    const move = (by) => {
      this.highlighted = (this.highlighted + by + this.matches.length) % this.matches.length;
      this.updateMenu();
    };
    if (e.key === "ArrowDown") move(1);
    else if (e.key === "ArrowUp") move(-1);
    else if (e.key === "Escape") this.hideMenu();
    else if (e.key === "Tab" || (e.key === "Enter" && !e.shiftKey)) {
      const chosen = this.matches[this.highlighted];
      const typed = chosen.mention ? this.mentionWord() : this.input.value.slice(1);
      // Enter on a command typed in full (that takes no argument) sends it.
      if (e.key === "Enter" && chosen.name === typed && !chosen.argumentHint) {
        this.hideMenu();
        return;
      }
      this.complete(chosen);
    } else return;
    e.preventDefault();
    e.stopImmediatePropagation();
  }
}
