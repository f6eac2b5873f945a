// The chat transcript: stored events on the path root → head, each rendered
// once and cached by event id, followed by the live part of a running turn.
// Tool cards are keyed by tool call id and updated in place, so a card that
// started live moves into its stored message instead of being drawn twice.

import { h, icon, reconcile, setChildren, fmtTokens, fmtCost, fmtDuration, fmtTime, shortId } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { contentText, normalizeUsage } from "./model.js";
import { argsSummary, renderArgs } from "./toolviews.js";

export class Transcript {
  /**
   * @param {HTMLElement} container  the scrolling element
   * @param {{onFork: (id: string) => void, onRewind: (id: string) => void, onOpenSession: (id: string) => void,
   *          onRetry: (errorEventId: string, opts: {edit: boolean}) => void}} actions
   */
  constructor(container, actions) {
    this.container = container;
    this.actions = actions;
    this.list = h("div", { class: "transcript-list", testid: "transcript-list" });
    this.container.append(this.list);
    this.sd = null;
    this.nodes = new Map();
    this.cards = new Map();
    this.live = this._buildLive();
    this.renderedVersion = -1;
    this.liveMarkdownTimer = null;
  }

  /** Show another session (drops the node caches of the previous one). */
  show(sd) {
    if (this.sd === sd) return;
    this.sd = sd;
    this.nodes.clear();
    this.cards.clear();
    this.renderedVersion = -1;
    clearTimeout(this.liveMarkdownTimer);
    this.liveMarkdownTimer = null;
    this.live = this._buildLive();
    this.list.replaceChildren();
    this.render(true);
  }

  render(forceScroll = false) {
    const sd = this.sd;
    if (!sd) return;
    const el = this.container;
    const nearBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
    const wanted = [];
    for (const ev of sd.path()) {
      const node = this._nodeFor(ev);
      if (node) wanted.push(node);
    }
    this._updateLive();
    wanted.push(this.live.root);
    reconcile(this.list, wanted);
    for (const [id, card] of this.cards) updateToolCard(card, sd.tools.get(id), sd);
    // Retry and Edit-and-resend are offered on the failure that ended the latest prompt only.
    const failed = sd.failedTail();
    for (const el of this.list.querySelectorAll("[data-testid=error-card]")) {
      el.dataset.actionable = String(el.dataset.eventId === failed && sd.session.status !== "ended" && !sd.busy);
    }
    this.renderedVersion = sd.version;
    if (forceScroll || nearBottom) el.scrollTop = el.scrollHeight;
  }

  /** Scroll to and flash the element showing `eventId`. Returns false when it is not on the path. */
  highlight(eventId) {
    const sd = this.sd;
    if (!sd) return false;
    let target = this.nodes.get(eventId);
    const ev = sd.events.get(eventId);
    if (!target && ev && (ev.type === "tool.call" || ev.type === "tool.result")) {
      const card = this.cards.get(ev.payload.toolCallId);
      if (card && card.root.isConnected) target = card.root;
    }
    if (!target && ev && ev.parentId && ev.type.startsWith("stream.")) target = this.nodes.get(ev.parentId);
    if (!target || !target.isConnected) return false;
    for (const old of this.list.querySelectorAll("[data-highlighted]")) {
      old.removeAttribute("data-highlighted");
      old.classList.remove("highlight");
    }
    target.dataset.highlighted = "true";
    target.classList.remove("highlight");
    void target.offsetWidth; // restart the flash animation
    target.classList.add("highlight");
    setTimeout(() => target.classList.remove("highlight"), 3000);
    target.scrollIntoView({ block: "center" });
    return true;
  }

  // -- stored events --------------------------------------------------------

  _nodeFor(ev) {
    if (this.nodes.has(ev.id)) return this.nodes.get(ev.id);
    const node = this._build(ev);
    this.nodes.set(ev.id, node);
    return node;
  }

  _build(ev) {
    const p = ev.payload || {};
    switch (ev.type) {
      case "message.user":
        return this._message(ev, "user", [userContent(p.content)]);
      case "message.assistant":
        return this._message(ev, "assistant", this._assistantBlocks(p.content));
      case "session.start": {
        if (p.parentSessionId) {
          // A sub-agent's session: say who started it, with a way back.
          const back = h("a", { href: `#s=${p.parentSessionId}`, testid: "open-parent", onclick: (e) => { e.preventDefault(); this.actions.onOpenSession(p.parentSessionId); } }, `session …${shortId(p.parentSessionId)}`);
          return systemLine(ev, "session-start", [
            `Sub-agent ${p.subagentType || ""} started by a Task call of `, back, ` · ${p.provider || ""} ${p.model || ""}`,
          ]);
        }
        return systemLine(ev, "session-start", [
          "Session started in ", h("code", {}, p.workingDirectory || "?"), ` · ${p.provider || ""} ${p.model || ""}`,
        ]);
      }
      case "session.fork": {
        const source = (this.actions.titleOf && this.actions.titleOf(p.sourceSessionId)) || `session …${shortId(p.sourceSessionId)}`;
        const link = h("a", { href: `#s=${p.sourceSessionId}`, testid: "fork-source", onclick: (e) => { e.preventDefault(); this.actions.onOpenSession(p.sourceSessionId); } }, source);
        return systemLine(ev, "session-fork", ["Forked from ", link, p.name ? ` as “${p.name}”` : ""]);
      }
      case "stream.turn_end": {
        const usage = p.usage || p.tokenUsage;
        if (!usage && p.cost === undefined) return null;
        return usageLine(ev.id, p.turn, usage, p.cost ?? p.costUsd, p.stopReason);
      }
      case "config.model_switch":
        return systemLine(ev, "model-switch", [`Model switched: ${p.previousModel || "?"} → ${p.newModel}`]);
      case "config.working_directory":
        return systemLine(ev, "folder-change", ["Continued in ", h("code", {}, p.workingDirectory), p.previousWorkingDirectory ? ` (was ${p.previousWorkingDirectory})` : ""]);
      case "config.reasoning_level":
        return systemLine(ev, "reasoning-level", [`Reasoning level: ${p.newLevel || "default"}`]);
      case "notification.interrupted":
        return systemLine(ev, "interrupted", ["Interrupted"]);
      case "compact.summary":
      case "compact.boundary":
        return ev.type === "compact.summary"
          ? systemLine(ev, "compacted", [h("details", {}, h("summary", {}, "Context compacted"), h("div", { class: "pre" }, p.summary || ""))])
          : null;
      case "context.cleared":
        return systemLine(ev, "context-cleared", ["Context cleared"]);
      case "message.system":
        return systemLine(ev, "system-message", [contentText(p.content)]);
      case "hook.context":
        // What a hook gave the model (it is part of the history the model sees).
        return systemLine(ev, "hook-context", [h("details", {}, h("summary", {}, `${p.hookEvent || "A"} hook added context`), h("div", { class: "pre" }, p.content || ""))]);
      case "memory.loaded": {
        // The memory put before the model (part of the history it sees).
        const n = (p.handoffIds || []).length;
        const what = [(p.ledger || []).length ? "ledger" : null, n ? `${n} handoff${n > 1 ? "s" : ""}` : null, (p.patterns || []).length ? "lessons" : null].filter(Boolean).join(", ");
        return systemLine(ev, "memory-loaded", [h("details", {}, h("summary", {}, `Memory loaded${what ? ` (${what})` : ""}`), h("div", { class: "pre" }, p.content || ""))]);
      }
      case "memory.handoff": {
        const steps = (p.nextSteps || []).length ? `\nNext steps: ${p.nextSteps.join("; ")}` : "";
        return systemLine(ev, "memory-handoff", [h("details", {}, h("summary", {}, p.complete === false ? "Handoff recorded (summary only)" : "Handoff recorded"), h("div", { class: "pre" }, `${p.summary || ""}${steps}`))]);
      }
      case "error.agent":
      case "error.provider":
        return this._errorCard(ev);
      case "turn.failed": {
        // Recorded right after the error.* event it sums up: the failure is shown once.
        const parent = this.sd.events.get(ev.parentId);
        if (parent && (parent.type === "error.provider" || parent.type === "error.agent")) return null;
        return this._errorCard(ev);
      }
      case "error.tool": {
        const line = systemLine(ev, "error", [`Tool error: ${p.message || p.error || JSON.stringify(p)}`]);
        line.classList.add("error");
        return line;
      }
      default:
        return null;
    }
  }

  /** A failed turn, once, with Retry and Edit-and-resend (both go back to before its prompt). */
  _errorCard(ev) {
    const p = ev.payload || {};
    const msg = p.message || p.error || p.reason || "the turn failed";
    const what = ev.type === "error.provider" || p.category === "provider" ? "The model provider failed" : ev.type === "error.agent" ? "The agent failed" : "The turn failed";
    const details = [p.provider, p.statusCode, p.errorType || (p.category !== "provider" ? p.category : null)].filter((x) => x !== undefined && x !== null && x !== "");
    return h(
      "div",
      { class: "error-card", testid: "error-card", dataset: { eventId: ev.id, actionable: "false", retryable: String(Boolean(p.retryable ?? p.recoverable)) } },
      h("div", { class: "error-title" }, what, details.length ? h("span", { class: "muted" }, ` · ${details.join(" ")}`) : null),
      h("div", { class: "error-message", testid: "error-message" }, msg),
      h(
        "div",
        { class: "error-actions" },
        h("button", { type: "button", class: "primary", testid: "retry-btn", title: "Send the same message again (the failed attempt stays in the tree)", onclick: () => this.actions.onRetry(ev.id, { edit: false }) }, "Retry"),
        h("button", { type: "button", testid: "edit-resend-btn", title: "Go back to before the failed message and edit it", onclick: () => this.actions.onRetry(ev.id, { edit: true }) }, "Edit and resend"),
      ),
    );
  }

  _message(ev, role, body) {
    const p = ev.payload || {};
    const meta = [];
    if (role === "assistant") {
      if (p.model) meta.push(p.model);
      if (p.interrupted) meta.push("interrupted");
      else if (p.stopReason && p.stopReason !== "end_turn" && p.stopReason !== "tool_use") meta.push(p.stopReason);
    }
    meta.push(fmtTime(ev.timestamp));
    const actions = h(
      "div",
      { class: "msg-actions" },
      h("button", { class: "link", testid: "fork-btn", title: "Start a new session from this point (the original stays as it is)", onclick: () => this.actions.onFork(ev.id) }, icon("fork"), "Fork"),
      h("button", { class: "link", testid: "rewind-btn", title: role === "user" ? "Go back to before this message and put it in the composer to edit (later events stay in the tree)" : "Move this session's head back to here (later events stay in the tree)", onclick: () => this.actions.onRewind(ev.id) }, icon("rewind"), "Rewind"),
    );
    return h(
      "article",
      { class: `msg ${role}`, testid: `msg-${role}`, dataset: { eventId: ev.id, sequence: ev.sequence } },
      h("div", { class: "msg-body" }, body),
      h("footer", { class: "msg-meta" }, h("span", { class: "muted" }, meta.filter(Boolean).join(" · ")), actions),
    );
  }

  _assistantBlocks(content) {
    const out = [];
    for (const block of Array.isArray(content) ? content : [{ type: "text", text: String(content ?? "") }]) {
      if (!block) continue;
      if (block.type === "text" && block.text) out.push(h("div", { class: "md", testid: "assistant-text" }, renderMarkdown(block.text)));
      else if (block.type === "thinking" && block.thinking) out.push(thinkingBlock(block.thinking, false));
      else if (block.type === "redacted_thinking") out.push(h("div", { class: "muted small" }, "(redacted thinking)"));
      else if (block.type === "tool_use") out.push(this._card(block.id).root);
    }
    return out;
  }

  _card(id) {
    let card = this.cards.get(id);
    if (!card) {
      card = buildToolCard(id, this.actions);
      this.cards.set(id, card);
    }
    return card;
  }

  // -- the live part of a running turn --------------------------------------

  _buildLive() {
    const thinking = h("details", { class: "thinking", testid: "live-thinking", open: true }, h("summary", {}, "Thinking…"), h("div", { class: "pre" }));
    const text = h("div", { class: "md", testid: "live-text" });
    const tools = h("div", { class: "live-tools" });
    const usage = h("div", { class: "live-usage" });
    const working = h("div", { class: "working", testid: "working" }, h("span", { class: "dots" }, h("i"), h("i"), h("i")), " working");
    const error = h("div", { class: "sys-line error", testid: "live-error" });
    const msg = h("article", { class: "msg assistant live", testid: "live-turn" }, h("div", { class: "msg-body" }, thinking, text, tools), working);
    const root = h("div", { class: "live-wrap" }, usage, msg, error);
    return { root, msg, thinking, text, tools, usage, working, error, lastText: null, renderedText: null, lastThinking: null };
  }

  _updateLive() {
    const sd = this.sd;
    const L = this.live;
    const live = sd.live;
    if (live.thinking !== L.lastThinking) {
      L.thinking.lastElementChild.textContent = live.thinking;
      L.thinking.hidden = !live.thinking;
      L.lastThinking = live.thinking;
    }
    if (live.text !== L.lastText) {
      L.lastText = live.text;
      // Markdown is re-rendered at most every 80 ms while streaming: at once, then
      // once more at the end of the window if the text changed meanwhile.
      const renderText = () => {
        setChildren(L.text, renderMarkdown(L.lastText || ""));
        L.renderedText = L.lastText;
      };
      if (!this.liveMarkdownTimer) {
        renderText();
        this.liveMarkdownTimer = setTimeout(() => {
          this.liveMarkdownTimer = null;
          if (this.live === L && L.renderedText !== L.lastText) renderText();
        }, 80);
      }
    }
    L.text.hidden = !live.text;
    const liveTools = sd.liveToolIds().map((id) => this._card(id).root);
    reconcile(L.tools, liveTools);
    const usageNodes = [];
    for (const [turn, u] of sd.liveUsage) usageNodes.push(usageLine(`live-${turn}`, turn, u.usage, u.cost, u.stopReason));
    reconcile(L.usage, usageNodes);
    L.working.hidden = !sd.busy;
    L.msg.hidden = !(live.text || live.thinking || liveTools.length || sd.busy);
    // Once the failure is stored, its card shows it: the live line would say it twice.
    const shown = live.error && !sd.failedTail();
    L.error.textContent = shown ? `Error: ${live.error}` : "";
    L.error.hidden = !shown;
  }
}

// -- building blocks ----------------------------------------------------------

function systemLine(ev, kind, children) {
  return h("div", { class: `sys-line ${kind}`, testid: `sys-${kind}`, dataset: { eventId: ev.id } }, children);
}

function usageLine(key, turn, usage, cost, stopReason) {
  const u = normalizeUsage(usage);
  const parts = [`in ${fmtTokens(u.input)}`, `out ${fmtTokens(u.output)}`];
  if (u.cacheRead) parts.push(`cache ${fmtTokens(u.cacheRead)}`);
  parts.push(fmtCost(cost));
  if (stopReason && !["end_turn", "tool_use", "stop_sequence"].includes(stopReason)) parts.push(stopReason.replace("_", " "));
  // A "turn" of the runtime is one model call (a prompt may take several, with tools between).
  return h(
    "div",
    { class: "usage-line", testid: "turn-usage", title: "This model call's tokens and cost", dataset: { key, turn: turn ?? "" } },
    turn !== undefined && turn !== null ? `Model call ${turn} · ` : "",
    parts.join(" · "),
  );
}

function thinkingBlock(text, open) {
  return h("details", { class: "thinking", testid: "thinking", open }, h("summary", {}, "Thinking"), h("div", { class: "pre" }, text));
}

function userContent(content) {
  if (typeof content === "string") return h("div", { class: "pre", testid: "user-text" }, content);
  const parts = [];
  for (const b of Array.isArray(content) ? content : []) {
    if (!b) continue;
    if (b.type === "text") parts.push(h("div", { class: "pre", testid: "user-text" }, b.text || ""));
    else if (b.type === "image") parts.push(h("div", { class: "muted small" }, "[image]"));
    else if (b.type === "tool_result") parts.push(h("div", { class: "pre muted" }, contentText(b.content)));
  }
  return parts;
}

function buildToolCard(id, actions) {
  const name = h("span", { class: "tool-name", testid: "tool-name" });
  const summary = h("span", { class: "tool-summary", testid: "tool-summary" });
  const status = h("span", { class: "tool-status", testid: "tool-status" });
  const duration = h("span", { class: "tool-duration", testid: "tool-duration" });
  const args = h("div", { class: "tool-args", testid: "tool-args" });
  const raw = h("pre", { class: "tool-args-raw", testid: "tool-args-raw" });
  const rawBox = h("details", { class: "raw-args" }, h("summary", {}, "Raw arguments"), raw);
  const output = h("pre", { class: "tool-output", testid: "tool-output" });
  const result = h("pre", { class: "tool-result", testid: "tool-result" });
  // Images in a result (a screenshot, an image Read): what the model saw.
  const images = h("div", { class: "tool-images", testid: "tool-images" });
  const outLabel = h("div", { class: "tool-label" });
  const body = h("div", { class: "tool-body" }, args, rawBox, outLabel, output, result, images);
  const head = h("button", { class: "tool-head", type: "button", "aria-expanded": "true" }, h("span", { class: "chevron" }), name, summary, h("span", { class: "spacer" }), duration, status);
  // A Task call's sub-agent: a link to its session and its latest activity (shown for Task only).
  const childLink = h("a", { class: "task-child", testid: "task-open-child", href: "#" });
  const activity = h("div", { class: "task-activity", testid: "task-activity", hidden: true });
  const taskBar = h("div", { class: "task-bar", hidden: true }, childLink, activity);
  const root = h("div", { class: "tool-card", testid: "tool-card", dataset: { toolCallId: id, status: "pending" } }, head, taskBar, body);
  const card = { root, name, summary, status, duration, args, raw, output, result, images, outLabel, body, taskBar, childLink, activity, childId: null, userToggled: false, last: "", lastArgs: null };
  childLink.addEventListener("click", (e) => {
    e.preventDefault();
    if (card.childId && actions) actions.onOpenSession(card.childId);
  });
  head.addEventListener("click", () => {
    card.userToggled = true;
    root.classList.toggle("collapsed");
    head.setAttribute("aria-expanded", String(!root.classList.contains("collapsed")));
  });
  return card;
}

/** The base64 image parts of a tool result, as <img> elements. */
function resultImages(content) {
  if (!Array.isArray(content)) return [];
  return content
    .filter((p) => p && p.type === "image" && p.source && p.source.type === "base64" && /^image\/(png|jpeg|gif|webp)$/.test(p.source.media_type || ""))
    .map((p) => h("img", { class: "tool-image", testid: "tool-image", alt: "An image the model saw", src: `data:${p.source.media_type};base64,${p.source.data}` }));
}

function toolContentText(content) {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((p) => (p && p.type === "text" ? p.text : p && p.type === "image" ? "[image]" : typeof p === "string" ? p : "")).join("\n");
  }
  return JSON.stringify(content, null, 2);
}

function updateToolCard(card, t, sd) {
  if (!t) return;
  if (t.status === "running" && t.startedAt && t.durationMs === undefined) {
    card.duration.textContent = fmtDuration(Math.floor((Date.now() - t.startedAt) / 100) * 100);
  }
  const argsText = t.arguments === undefined ? "" : JSON.stringify(t.arguments);
  const resultText = toolContentText(t.result);
  const key = [t.name, t.status, argsText, t.output.length, resultText.length, t.durationMs, t.isError, t.child?.sessionId, t.child?.status, t.childLive?.version].join("|");
  if (key === card.last) return;
  card.last = key;
  updateTaskBar(card, t);
  card.name.textContent = t.name || "tool";
  const viewCtx = { sd, id: t.id, cwd: sd?.session.workingDirectory };
  card.summary.textContent = argsSummary(t.name, t.arguments, viewCtx);
  const argsKey = `${t.name}|${argsText}|${t.status === "done"}`;
  if (argsKey !== card.lastArgs) {
    card.lastArgs = argsKey;
    setChildren(card.args, renderArgs(t.name, t.arguments, viewCtx));
    card.raw.textContent = t.arguments === undefined ? "" : JSON.stringify(t.arguments, null, 2);
  }
  card.root.dataset.status = t.status;
  card.root.classList.toggle("error", t.status === "error");
  card.status.textContent = { pending: "queued", running: "running", done: "done", error: "error" }[t.status] || t.status;
  card.duration.textContent = t.durationMs !== undefined ? fmtDuration(t.durationMs) : "";
  // While running, show the streamed output; once there is a result, the result (which holds the output).
  const showResult = t.result !== undefined;
  card.output.textContent = showResult ? "" : t.output;
  card.output.hidden = showResult || !t.output;
  card.result.textContent = resultText;
  card.result.hidden = !showResult;
  setChildren(card.images, showResult ? resultImages(t.result) : []);
  card.outLabel.textContent = showResult ? (t.isError ? "Error" : "Result") : "Output";
  card.outLabel.hidden = showResult ? false : !t.output;
  if (!card.userToggled) card.root.classList.toggle("collapsed", false);
}


/** A Task card: the link to the sub-agent's session and, while it runs, what it is doing. */
function updateTaskBar(card, t) {
  const isTask = t.name === "Task";
  card.root.classList.toggle("task-card", isTask);
  if (!isTask) {
    card.taskBar.hidden = true;
    return;
  }
  const child = t.child || {};
  card.childId = child.sessionId || null;
  card.root.dataset.childSessionId = card.childId || "";
  card.childLink.hidden = !card.childId;
  card.childLink.href = card.childId ? `#s=${card.childId}` : "#";
  card.childLink.dataset.sessionId = card.childId || "";
  card.childLink.textContent = `Open sub-agent${child.type ? ` ${child.type}` : ""} · session …${shortId(card.childId || "")}`;
  const live = t.childLive;
  const running = t.status === "running" || t.status === "pending";
  let line = "";
  if (live && running) {
    const text = live.text.trim().split("\n").pop();
    line = live.error ? `error: ${live.error}` : text || live.activity || (live.turn ? `turn ${live.turn}` : "");
  }
  card.activity.textContent = line;
  card.activity.hidden = !line;
  card.taskBar.hidden = !card.childId && !line;
}
