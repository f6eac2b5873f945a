// Client-side state of one session: its stored events (deduplicated by id),
// the head, the live (not yet stored) part of a running turn, and the state of
// every tool call, merged from stored events and live notifications.

/** Event types that are messages in the transcript and nodes in the tree. */
export const MESSAGE_TYPES = new Set(["message.user", "message.assistant"]);

export class SessionData {
  constructor(session) {
    this.id = session.id;
    this.session = session;
    /** @type {Map<string, object>} every event we have, by id (inherited ones too) */
    this.events = new Map();
    this.headId = session.headEventId || null;
    /** the last event that arrived as events.new (guards the head against stale snapshots) */
    this.liveHead = null;
    /** the highest sequence of this session's own events seen so far (events.sync cursor) */
    this.lastSequence = -1;
    this.loaded = false;
    /** @type {Map<string, object>} tool call id → {id, name, arguments, output, result, isError, durationMs, status} */
    this.tools = new Map();
    /** tool call ids that appear as tool_use blocks of a stored assistant message */
    this.storedToolUse = new Set();
    this.live = emptyLive();
    this.busy = false;
    /** live usage per turn (agent.turn_end) until the stored stream.turn_end arrives */
    this.liveUsage = new Map();
    this.storedUsageTurns = new Set();
    this.version = 0; // bumped on every change that needs a render
  }

  /**
   * Take a Session object from the server. `mode`:
   *  - "meta": counters and title only (session.list: the head may be stale);
   *  - "snapshot": also the head, unless an event that arrived live since is a
   *    descendant of it (the snapshot was taken before that event was stored);
   *  - "rewind": the head, unconditionally (it moved back on purpose).
   */
  setSession(session, mode = "snapshot") {
    this.session = session;
    if (mode !== "meta" && session.headEventId) {
      this.headId = session.headEventId;
      if (mode === "rewind") this.liveHead = null;
      else if (this.liveHead && this.isAncestorOrSelf(session.headEventId, this.liveHead)) this.headId = this.liveHead;
    }
    this.version++;
  }

  /** Whether event `a` is `b` or one of its ancestors. */
  isAncestorOrSelf(a, b) {
    const seen = new Set();
    for (let id = b; id && !seen.has(id); id = this.events.get(id)?.parentId) {
      if (id === a) return true;
      seen.add(id);
    }
    return false;
  }

  /**
   * Add a stored event. Returns false when we already had it (dedupe: every
   * event is rendered exactly once however often it is delivered).
   * `live` = it came as events.new, so it is the session's new head.
   */
  addEvent(ev, { live = false } = {}) {
    if (this.events.has(ev.id)) return false;
    this.events.set(ev.id, ev);
    if (ev.sessionId === this.id && ev.sequence > this.lastSequence) {
      this.lastSequence = ev.sequence;
      if (live) {
        this.headId = ev.id;
        this.liveHead = ev.id;
      }
    }
    this._applyStored(ev);
    this.version++;
    return true;
  }

  _applyStored(ev) {
    const p = ev.payload || {};
    switch (ev.type) {
      case "message.assistant": {
        for (const block of Array.isArray(p.content) ? p.content : []) {
          if (block && block.type === "tool_use") {
            const t = this.tool(block.id);
            t.name = t.name || block.name;
            if (!t.argumentsFull) t.arguments = block.input;
            this.storedToolUse.add(block.id);
          }
        }
        // The stored message now holds what was streamed: the live text is done.
        this.live.text = "";
        this.live.thinking = "";
        break;
      }
      case "tool.call": {
        const t = this.tool(p.toolCallId);
        t.name = p.name || t.name;
        t.arguments = p.arguments; // full arguments (message blocks may be truncated)
        t.argumentsFull = true;
        t.callEventId = ev.id;
        if (t.status === "pending") t.status = "running";
        break;
      }
      case "tool.result": {
        const t = this.tool(p.toolCallId);
        t.result = p.content;
        t.isError = Boolean(p.isError);
        t.status = t.isError ? "error" : "done";
        const d = p.details;
        if (d && typeof d.sessionId === "string" && t.name === "Task") {
          t.child = { ...(t.child || {}), sessionId: d.sessionId, type: d.subagentType, status: p.isError ? "error" : "done" };
        }
        if (p.duration !== undefined && p.duration !== null) t.durationMs = p.duration;
        else if (p.durationMs !== undefined) t.durationMs = p.durationMs;
        t.resultEventId = ev.id;
        break;
      }
      case "subagent.spawned": {
        const t = this.tool(p.toolCallId);
        t.child = { ...(t.child || {}), sessionId: p.childSessionId, type: p.subagentType, status: t.child?.status === "done" ? "done" : "running" };
        break;
      }
      case "subagent.completed":
      case "subagent.failed": {
        const t = this.tool(p.toolCallId);
        const sessionId = p.childSessionId || t.child?.sessionId;
        if (sessionId || t.child) t.child = { ...(t.child || {}), sessionId, type: p.subagentType || t.child?.type, status: ev.type === "subagent.completed" ? "done" : "error" };
        break;
      }
      case "stream.turn_end": {
        if (p.turn !== undefined) {
          this.storedUsageTurns.add(p.turn);
          this.liveUsage.delete(p.turn);
        }
        break;
      }
      default:
        break;
    }
  }

  tool(id) {
    let t = this.tools.get(id);
    if (!t) {
      t = { id, name: "", arguments: undefined, output: "", result: undefined, isError: false, durationMs: undefined, status: "pending" };
      this.tools.set(id, t);
    }
    return t;
  }

  /** The history shown in the chat: the ancestor path root → head. */
  path() {
    const out = [];
    const seen = new Set();
    let id = this.headId;
    while (id && !seen.has(id)) {
      const ev = this.events.get(id);
      if (!ev) break;
      seen.add(id);
      out.push(ev);
      id = ev.parentId;
    }
    return out.reverse();
  }

  pathIds() {
    return new Set(this.path().map((e) => e.id));
  }

  /**
   * The stored failure that ended the latest prompt on the path (an error.provider,
   * error.agent or turn.failed after the last message.user), or null.
   */
  failedTail() {
    const path = this.path();
    for (let i = path.length - 1; i >= 0; i--) {
      const t = path[i].type;
      if (t === "message.user") return null;
      if (t === "error.provider" || t === "error.agent") return path[i].id;
      if (t === "turn.failed") {
        const parent = this.events.get(path[i].parentId);
        return parent && (parent.type === "error.provider" || parent.type === "error.agent") ? parent.id : path[i].id;
      }
    }
    return null;
  }

  /**
   * The prompt of the path's last turn when it failed before any reply (nothing of
   * the model's after it): sent as it is, the next prompt would reach the model
   * merged with it. Null otherwise.
   */
  unansweredFailedPrompt() {
    const path = this.path();
    let failed = false;
    for (let i = path.length - 1; i >= 0; i--) {
      const ev = path[i];
      if (ev.type === "error.provider" || ev.type === "error.agent" || ev.type === "turn.failed") failed = true;
      else if (ev.type === "message.assistant") return null;
      else if (ev.type === "message.user") return failed && isPrompt(ev) ? ev : null;
    }
    return null;
  }

  /** The prompt (message.user) a stored failure answered: the last one before it on the path. */
  promptBefore(eventId) {
    const path = this.path();
    const at = path.findIndex((e) => e.id === eventId);
    for (let i = at - 1; i >= 0; i--) if (path[i].type === "message.user") return path[i];
    return null;
  }

  /** Apply a live notification. Returns true when something changed. */
  applyNotification(method, data) {
    const live = this.live;
    switch (method) {
      case "agent.turn_start":
        this.busy = true;
        live.turn = data.turn;
        live.text = "";
        live.thinking = "";
        live.error = null;
        break;
      case "agent.text_delta":
        if (live.ignoreUntilSnapshot) return false;
        live.text += data.delta || "";
        break;
      case "agent.thinking_delta":
        if (live.ignoreUntilSnapshot) return false;
        live.thinking += data.delta || "";
        break;
      case "agent.tool_start": {
        const t = this.tool(data.toolCallId);
        t.name = data.name || t.name;
        if (!t.argumentsFull && data.arguments !== undefined) t.arguments = data.arguments;
        if (t.status === "pending") t.status = "running";
        t.startedAt = Date.now();
        break;
      }
      case "agent.tool_output": {
        if (live.ignoreUntilSnapshot) return false;
        const t = this.tool(data.toolCallId);
        t.output += data.chunk || "";
        break;
      }
      case "agent.tool_end": {
        const t = this.tool(data.toolCallId);
        t.name = data.name || t.name;
        if (t.result === undefined && data.content !== undefined) t.result = data.content;
        t.isError = Boolean(data.isError);
        t.status = t.isError ? "error" : "done";
        if (data.durationMs !== undefined) t.durationMs = data.durationMs;
        break;
      }
      case "agent.turn_end":
        if (data.turn !== undefined && !this.storedUsageTurns.has(data.turn)) {
          this.liveUsage.set(data.turn, { usage: data.usage || {}, cost: data.cost, stopReason: data.stopReason });
        }
        break;
      case "agent.complete":
        this.busy = false;
        live.text = "";
        live.thinking = "";
        live.queued = 0;
        break;
      case "agent.error":
        live.error = data.message || "The agent failed";
        break;
      default:
        return false;
    }
    this.version++;
    return true;
  }

  /**
   * A notification of one of this session's sub-agents (a child session working for
   * a Task call): its activity goes on that Task's card. Returns true when it changed.
   */
  applyChildNotification(childId, method, data) {
    if (!data.parentToolCallId) return false;
    const t = this.tool(data.parentToolCallId);
    if (!t.child || !t.child.sessionId) t.child = { ...(t.child || {}), sessionId: childId, status: "running" };
    const live = (t.childLive = t.childLive || { text: "", activity: "", turn: null, done: false });
    switch (method) {
      case "agent.turn_start":
        live.turn = data.turn;
        live.text = "";
        live.done = false;
        break;
      case "agent.text_delta":
        live.text = (live.text + (data.delta || "")).slice(-400);
        break;
      case "agent.tool_start":
        live.activity = `→ ${data.name || "tool"}`;
        live.text = "";
        break;
      case "agent.tool_end":
        live.activity = `${data.isError ? "✗" : "✓"} ${data.name || "tool"}`;
        break;
      case "agent.complete":
        live.done = true;
        live.stopReason = data.stopReason;
        break;
      case "agent.error":
        live.error = data.message || "the sub-agent failed";
        break;
      default:
        return false;
    }
    live.version = (live.version || 0) + 1;
    this.version++;
    return true;
  }

  /**
   * Seed the live part from agent.getState (a late or reconnecting client).
   * Deltas that arrived before this snapshot are already in it.
   */
  applySnapshot(state) {
    this.busy = Boolean(state.busy ?? state.isRunning);
    this.live.ignoreUntilSnapshot = false;
    if (this.busy) {
      this.live.turn = state.turn;
      // While the turn's tools run, its message is already stored: the snapshot's
      // text is that message's, not something still streaming.
      const stored =
        state.turn !== null &&
        state.turn !== undefined &&
        this.path().some((e) => e.type === "message.assistant" && e.sessionId === this.id && e.payload.turn === state.turn);
      this.live.text = stored ? "" : state.text || "";
      this.live.thinking = stored ? "" : state.thinking || "";
      for (const tc of state.toolCalls || []) {
        const t = this.tool(tc.toolCallId || tc.id);
        t.name = tc.name || t.name;
        if (!t.argumentsFull && tc.arguments !== undefined) t.arguments = tc.arguments;
        if (tc.output !== undefined) t.output = tc.output;
        if (t.result === undefined) {
          t.status = tc.status === "error" ? "error" : tc.status === "done" ? "done" : "running";
        }
      }
    } else {
      this.live.text = "";
      this.live.thinking = "";
    }
    this.version++;
  }

  /**
   * Token use and cost of this session: every turn it ran (its own
   * stream.turn_end events, off-path ones too: they were paid for), plus
   * turns that ended live and are not stored yet.
   */
  usageTotals() {
    // turns: model calls; prompts: the user's messages (both on every branch: all were paid for).
    const total = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, costKnown: true, turns: 0, prompts: 0 };
    const add = (usage, cost) => {
      const u = normalizeUsage(usage);
      total.input += u.input;
      total.output += u.output;
      total.cacheRead += u.cacheRead;
      total.cacheWrite += u.cacheWrite;
      if (cost === null || cost === undefined) total.costKnown = false;
      else total.cost += Number(cost) || 0;
      total.turns += 1;
    };
    for (const ev of this.events.values()) {
      if (ev.sessionId !== this.id) continue;
      if (ev.type === "stream.turn_end") add(ev.payload.tokenUsage || ev.payload.usage, ev.payload.cost);
      else if (ev.type === "message.user") total.prompts += 1;
    }
    for (const u of this.liveUsage.values()) add(u.usage, u.cost);
    return total;
  }

  /** Tool calls being shown live: started, but not yet part of a stored message. */
  liveToolIds() {
    const out = [];
    for (const [id, t] of this.tools) {
      if (!this.storedToolUse.has(id) && t.status !== "pending") out.push(id);
    }
    return out;
  }
}

function emptyLive() {
  return { turn: null, text: "", thinking: "", error: null, queued: 0, ignoreUntilSnapshot: false };
}

/** Plain text of message content (a string or Anthropic-shaped blocks). */
/** A message.user the user wrote (text or images), not one of tool results. */
export function isPrompt(ev) {
  const c = ev.payload && ev.payload.content;
  if (typeof c === "string") return true;
  return Array.isArray(c) && c.some((b) => b && (b.type === "text" || b.type === "image"));
}

export function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((b) => {
      if (!b) return "";
      if (typeof b === "string") return b;
      if (b.type === "text") return b.text || "";
      if (b.type === "tool_result") return contentText(b.content);
      return "";
    })
    .filter(Boolean)
    .join("\n");
}

/** Usage numbers from any of the shapes the server sends (turn_end notification, stored events). */
export function normalizeUsage(u) {
  u = u || {};
  return {
    input: u.inputTokens ?? u.input_tokens ?? 0,
    output: u.outputTokens ?? u.output_tokens ?? 0,
    cacheRead: u.cacheReadTokens ?? u.cache_read_tokens ?? 0,
    cacheWrite: u.cacheWriteTokens ?? u.cacheCreationTokens ?? u.cache_write_tokens ?? 0,
    reasoning: u.reasoningTokens ?? 0,
  };
}
