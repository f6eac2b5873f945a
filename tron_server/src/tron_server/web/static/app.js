// The Tron web chat: wires the RPC client, the session list, the transcript,
// the tree, search and the composer together. No build step, no dependencies.

import { RpcClient, RpcError } from "./rpc.js";
import { SessionData, contentText } from "./model.js";
import { Transcript } from "./transcript.js";
import { TreeView } from "./tree.js";
import { Interaction } from "./interaction.js";
import { h, icon, setChildren, fmtTokens, fmtCost, fmtTime, basename, shortId, markedSnippet } from "./dom.js";

const $ = (id) => document.getElementById(id);

const state = {
  /** @type {Map<string, object>} session id → Session (from session.list and notifications) */
  sessions: new Map(),
  /** @type {Map<string, SessionData>} sessions opened in this page */
  data: new Map(),
  currentId: null,
  models: [],
  info: null,
  /** the session we are subscribed to (one at a time) */
  subscribedId: null,
  openToken: 0,
};

const wsUrl = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/rpc`;
const rpc = new RpcClient(wsUrl);
// Exposed for debugging from the console and for the browser tests.
window.tron = { rpc, state };

const transcript = new Transcript($("transcript"), {
  onFork: (id) => forkFrom(id),
  onRewind: (id) => rewindTo(id),
  onOpenSession: (id) => openSession(id),
});
// Questions, approvals, the permission mode and slash commands (interaction.js).
const interaction = new Interaction({
  rpc,
  toast: (message, kind) => toast(message, kind),
  sessionId: () => state.subscribedId,
  openSession: (id) => openSession(id),
});
const tree = new TreeView($("tree"), {
  onSelect: (id) => selectInTree(id),
  onFork: (id) => forkFrom(id),
  onRewind: (id) => rewindTo(id),
});

// ---------------------------------------------------------------------------
// Rendering (batched per animation frame)

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    renderCurrent();
  });
}

function current() {
  return state.currentId ? state.data.get(state.currentId) : null;
}

function renderCurrent() {
  const sd = current();
  const has = Boolean(sd);
  $("empty").hidden = has;
  $("composer").hidden = !has;
  document.querySelector(".chat-header").hidden = !has;
  $("transcript").hidden = !has;
  if (!sd) {
    setChildren($("tree"));
    return;
  }
  transcript.render();
  tree.render(sd);
  renderHeader(sd);
  renderComposerState(sd);
}

function sessionTitle(session, sd) {
  if (session.title) return session.title;
  if (sd) {
    const first = sd.path().find((e) => e.type === "message.user");
    if (first) return contentText(first.payload.content).slice(0, 80) || "New session";
  }
  return `New session · ${fmtTime(session.createdAt)}`;
}

function renderHeader(sd) {
  const s = sd.session;
  $("session-title").textContent = sessionTitle(s, sd);
  $("session-cwd").textContent = s.workingDirectory || "";
  const status = $("session-status");
  status.textContent = s.status === "ended" ? "ended" : sd.busy ? "working" : "";
  status.hidden = !status.textContent;
  status.dataset.state = s.status === "ended" ? "ended" : sd.busy ? "busy" : "idle";
  const usage = $("session-usage");
  const t = sd.usageTotals();
  // Totals from the session's own turns; the Session row's counters when no turn recorded usage.
  const input = t.turns ? t.input : s.inputTokens;
  const output = t.turns ? t.output : s.outputTokens;
  const parts = [`in ${fmtTokens(input)}`, `out ${fmtTokens(output)}`];
  const cacheRead = t.turns ? t.cacheRead : s.cacheReadTokens;
  if (cacheRead) parts.push(`cache ${fmtTokens(cacheRead)}`);
  parts.push(t.turns ? (t.costKnown || t.cost ? fmtCost(t.cost) : "cost unknown") : fmtCost(s.cost));
  parts.push(`${t.turns} turn${t.turns === 1 ? "" : "s"}`);
  // session.get reports the session with all its sub-agents; keep the last one seen.
  if (s.totalWithChildren) sd.totalWithChildren = s.totalWithChildren;
  const all = sd.totalWithChildren;
  if (all && all.sessions > 1) parts.push(`with sub-agents ${fmtCost(all.cost)}`);
  usage.textContent = parts.join(" · ");
  usage.dataset.cost = String(t.cost);
  usage.dataset.turns = String(t.turns);
  renderModelSelect(s);
  const branches = [...sd.events.values()].filter((e) => e.type === "message.user" || e.type === "message.assistant").length;
  $("tree-stats").textContent = `${branches} messages · head …${shortId(sd.headId)}`;
}

function renderModelSelect(session) {
  const sel = $("model-select");
  const key = `${session.provider}::${session.model}`;
  const sig = `${key}|${state.models.length}`;
  if (sel.dataset.sig === sig) return;
  sel.dataset.sig = sig;
  const byProvider = new Map();
  for (const m of state.models) {
    if (!byProvider.has(m.provider)) byProvider.set(m.provider, []);
    byProvider.get(m.provider).push(m);
  }
  if (!state.models.some((m) => m.id === session.model && m.provider === session.provider)) {
    if (!byProvider.has(session.provider)) byProvider.set(session.provider, []);
    byProvider.get(session.provider).unshift({ id: session.model, provider: session.provider, name: session.model });
  }
  const groups = [];
  for (const [provider, models] of byProvider) {
    groups.push(h("optgroup", { label: provider }, models.map((m) => h("option", { value: `${m.provider}::${m.id}` }, m.name && m.name !== m.id ? `${m.name}` : m.id))));
  }
  setChildren(sel, groups);
  sel.value = key;
}

function renderComposerState(sd) {
  const ended = sd.session.status === "ended";
  $("composer-input").disabled = ended;
  $("composer-input").placeholder = ended
    ? "This session has ended: fork it from any message to continue"
    : "Message the agent — Enter to send, Shift+Enter for a new line, Esc to abort";
  $("abort-btn").hidden = !sd.busy;
  $("abort-btn").disabled = !rpc.connected;
  $("send-btn").textContent = sd.busy ? "Queue" : "Send";
  $("send-btn").title = sd.busy ? "The agent is working: this message runs after the current one" : "Send (Enter)";
  $("send-btn").disabled = ended || !rpc.connected;
}

// ---------------------------------------------------------------------------
// Session list (grouped by working directory)

function isChild(s) {
  return Boolean(s.parentSessionId) && !s.forkFromEventId && state.sessions.has(s.parentSessionId);
}

function renderSessions() {
  const groups = new Map();
  const sessions = [...state.sessions.values()].sort((a, b) => String(b.lastActivityAt).localeCompare(String(a.lastActivityAt)));
  // Sub-agent sessions are listed under their parent (oldest first), not on their own.
  const children = new Map();
  for (const s of [...sessions].reverse()) {
    if (!isChild(s)) continue;
    if (!children.has(s.parentSessionId)) children.set(s.parentSessionId, []);
    children.get(s.parentSessionId).push(s);
  }
  for (const s of sessions) {
    if (isChild(s)) continue;
    const key = s.workingDirectory || "(unknown)";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(s);
  }
  const nodes = [];
  for (const [dir, list] of groups) {
    nodes.push(
      h(
        "section",
        { class: "workspace", testid: "workspace-group", dataset: { path: dir } },
        h("header", { class: "workspace-name", title: dir }, h("span", { class: "folder" }, "▸"), basename(dir), h("span", { class: "muted path" }, dir)),
        list.map((s) => sessionTree(s, children, 0)),
      ),
    );
  }
  if (!nodes.length) nodes.push(h("p", { class: "muted small pad" }, "No sessions yet."));
  setChildren($("session-list"), nodes);
}

function sessionTree(s, children, depth, seen = new Set()) {
  const kids = seen.has(s.id) ? [] : children.get(s.id) || [];
  seen.add(s.id);
  const item = sessionItem(s, depth);
  if (!kids.length) return item;
  return h(
    "div",
    { class: "session-family", testid: "session-family", dataset: { sessionId: s.id } },
    item,
    h("div", { class: "session-children", testid: "session-children" }, kids.map((k) => sessionTree(k, children, depth + 1, seen))),
  );
}

function sessionItem(s, depth = 0) {
  const sd = state.data.get(s.id);
  const active = s.id === state.currentId;
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
      isChild(s) ? h("span", { class: "child-mark", title: "a sub-agent session (opened from its parent's Task call)" }, "↳ ") : null,
      sessionTitle(s, sd),
    ),
    h("span", { class: "session-meta muted" }, meta.filter(Boolean).join(" · ")),
  );
}

let sessionsRefreshTimer = null;
function refreshSessionsSoon() {
  clearTimeout(sessionsRefreshTimer);
  sessionsRefreshTimer = setTimeout(refreshSessions, 300);
}

async function refreshSessions() {
  try {
    const res = await rpc.call("session.list", { limit: 200 });
    for (const s of res.sessions || []) {
      state.sessions.set(s.id, s);
      const sd = state.data.get(s.id);
      if (sd) sd.setSession(s, "meta");
    }
    renderSessions();
  } catch (err) {
    if (!isNetwork(err)) toast(`Could not list sessions: ${err.message}`);
  }
}

// ---------------------------------------------------------------------------
// Opening a session: load its tree, subscribe, catch up, take the live state

async function openSession(id, { eventId = null } = {}) {
  if (!id) return;
  const token = ++state.openToken;
  if (state.currentId !== id) {
    state.currentId = id;
    if (location.hash !== `#s=${id}`) history.replaceState(null, "", `#s=${id}`);
    let sd = state.data.get(id);
    if (!sd) {
      sd = new SessionData(state.sessions.get(id) || { id });
      state.data.set(id, sd);
    }
    transcript.show(sd);
    renderSessions();
    renderCurrent();
  }
  if (rpc.connected) {
    try {
      await attach(id);
    } catch (err) {
      if (err instanceof RpcError && err.code === -32000) {
        toast(`Session ${shortId(id)} no longer exists.`);
        state.data.delete(id);
        state.currentId = null;
        history.replaceState(null, "", "#");
        renderCurrent();
        return;
      }
      if (!isNetwork(err)) toast(`Could not open the session: ${err.message}`);
    }
  }
  if (token !== state.openToken) return;
  renderCurrent();
  if (eventId) jumpToEvent(eventId);
}

/**
 * Subscribe to `id` and catch up: the tree (first time), then every own event
 * after the last sequence we saw (events.sync), the head (session.get) and the
 * running turn (agent.getState). Events arriving meanwhile are deduplicated by id.
 */
async function attach(id) {
  const sd = state.data.get(id);
  if (state.subscribedId && state.subscribedId !== id) {
    const old = state.subscribedId;
    state.subscribedId = null;
    rpc.call("events.unsubscribe", { sessionId: old }).catch(() => {});
  }
  sd.live.ignoreUntilSnapshot = true; // deltas before the snapshot are in it
  sd.liveHead = null;
  try {
    await rpc.call("events.subscribe", { sessionId: id });
    state.subscribedId = id;
    if (!sd.loaded) {
      const t = await rpc.call("session.getTree", { sessionId: id });
      for (const ev of t.events || []) sd.addEvent(ev);
      if (t.headEventId) sd.headId = t.headEventId;
      sd.loaded = true;
    }
    await syncEvents(sd);
    const session = await rpc.call("session.get", { sessionId: id });
    sd.setSession(session, "snapshot");
    state.sessions.set(id, session);
    try {
      const snapshot = await rpc.call("agent.getState", { sessionId: id });
      sd.applySnapshot(snapshot);
      interaction.attached(id, session, snapshot);
    } catch (err) {
      if (isNetwork(err)) throw err;
      sd.live.ignoreUntilSnapshot = false;
    }
  } finally {
    if (sd.live.ignoreUntilSnapshot && !rpc.connected) sd.live.ignoreUntilSnapshot = false;
  }
  scheduleRender();
}

async function syncEvents(sd) {
  for (let guard = 0; guard < 10_000; guard++) {
    const after = sd.lastSequence;
    const page = await rpc.call("events.sync", { sessionId: sd.id, afterSequence: after, limit: 500 });
    for (const ev of page.events || []) sd.addEvent(ev);
    if (!page.hasMore || !(page.events || []).length) return;
  }
}

// ---------------------------------------------------------------------------
// Notifications

rpc.addEventListener("notification", (e) => {
  const { method, params } = e.detail;
  const sessionId = params.sessionId;
  const data = params.data || {};
  if (interaction.onNotification(method, sessionId, data)) return;
  if (method.startsWith("session.")) return onSessionNotification(method, sessionId, data);
  if (sessionId !== state.subscribedId && data.parentSessionId && data.parentSessionId === state.subscribedId) {
    // A sub-agent of the open session: its progress shows on the Task card.
    const parent = state.data.get(data.parentSessionId);
    if (parent && parent.applyChildNotification(sessionId, method, data)) scheduleRender();
    if (method === "agent.complete") refreshSessionSoon(sessionId);
    return;
  }
  const sd = sessionId ? state.data.get(sessionId) : null;
  if (!sd || sessionId !== state.subscribedId) return;
  if (method === "events.new") {
    if (sd.addEvent(data, { live: true })) scheduleRender();
    return;
  }
  if (sd.applyNotification(method, data)) scheduleRender();
  if (method === "agent.error") toast(data.message || "The agent failed", "error");
  if (method === "agent.turn_end" || method === "agent.complete") refreshSessionSoon(sd.id);
});

function onSessionNotification(method, sessionId, data) {
  const session = data.session;
  if (method === "session.deleted") {
    const id = data.sessionId || sessionId;
    state.sessions.delete(id);
    state.data.delete(id);
    if (state.currentId === id) {
      state.currentId = null;
      renderCurrent();
    }
    renderSessions();
    return;
  }
  if (!session) return refreshSessionsSoon();
  state.sessions.set(session.id, session);
  const sd = state.data.get(session.id);
  if (sd) {
    sd.setSession(session, method === "session.rewound" ? "rewind" : "snapshot");
    if (session.id === state.currentId) scheduleRender();
  }
  renderSessions();
}

const sessionRefreshTimers = new Map();
function refreshSessionSoon(id) {
  clearTimeout(sessionRefreshTimers.get(id));
  sessionRefreshTimers.set(
    id,
    setTimeout(async () => {
      try {
        const s = await rpc.call("session.get", { sessionId: id });
        state.sessions.set(id, s);
        const sd = state.data.get(id);
        if (sd) sd.setSession(s, "meta");
        renderSessions();
        scheduleRender();
      } catch {
        /* the next refresh will do */
      }
    }, 250),
  );
}

// ---------------------------------------------------------------------------
// Connection

const STATUS_LABEL = {
  connecting: "Connecting…",
  connected: "Connected",
  offline: "Reconnecting…",
  unauthorized: "Log in again",
};

let countdownTimer = null;
rpc.addEventListener("status", (e) => {
  const { status, retryInMs } = e.detail;
  const el = $("conn");
  el.dataset.state = status;
  if (status !== "connected") el.dataset.synced = "false";
  el.title = status === "connected" ? `Connected to ${location.host}` : "";
  const label = el.querySelector(".label");
  clearInterval(countdownTimer);
  label.textContent = STATUS_LABEL[status] || status;
  if (status === "offline" && retryInMs) {
    const until = Date.now() + retryInMs;
    const tick = () => {
      const s = Math.max(0, Math.ceil((until - Date.now()) / 1000));
      label.textContent = s > 0 ? `Offline · retry in ${s}s` : "Reconnecting…";
    };
    tick();
    countdownTimer = setInterval(tick, 500);
  }
  $("login-banner").hidden = status !== "unauthorized";
  const sd = current();
  if (sd) renderComposerState(sd);
});

rpc.addEventListener("open", async () => {
  state.subscribedId = null;
  const conn = $("conn");
  conn.dataset.synced = "false";
  conn.querySelector(".label").textContent = "Syncing…";
  // The server may have restarted: everything below is idempotent.
  const [info, models] = await Promise.allSettled([rpc.call("system.info"), rpc.call("model.list")]);
  if (info.status === "fulfilled") state.info = info.value;
  if (models.status === "fulfilled") state.models = models.value.models || [];
  await refreshSessions();
  const target = state.currentId || hashState().sessionId;
  if (target) {
    try {
      if (state.currentId === target) await attach(target);
      else await openSession(target, { eventId: hashState().eventId });
    } catch (err) {
      if (!isNetwork(err)) toast(`Could not resume the session: ${err.message}`);
    }
  }
  scheduleRender();
  if (rpc.connected) {
    // Caught up: subscribed, synced, live state taken.
    conn.dataset.synced = "true";
    conn.querySelector(".label").textContent = STATUS_LABEL.connected;
  }
});

$("login-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const raw = $("login-input").value.trim();
  if (!raw) return;
  let token = raw;
  try {
    const u = new URL(raw);
    token = u.searchParams.get("token") || raw;
  } catch {
    /* a bare token */
  }
  try {
    // /login sets the HttpOnly cookie for this origin; the page stays as it is.
    const res = await fetch(`/login?token=${encodeURIComponent(token)}`, { credentials: "same-origin", redirect: "manual" });
    if (res.type !== "opaqueredirect" && !res.ok) throw new Error(`the server said ${res.status}`);
    $("login-input").value = "";
    rpc.reconnectNow();
  } catch (err) {
    toast(`Login failed: ${err.message}. Check the token in ~/.tron/server-token.`, "error");
  }
});

// ---------------------------------------------------------------------------
// Actions

async function sendMessage() {
  const sd = current();
  const input = $("composer-input");
  const text = input.value;
  if (!sd || !text.trim()) return;
  input.value = "";
  autosize();
  try {
    if (state.subscribedId !== sd.id) await attach(sd.id);
    const res = await rpc.call("agent.message", { sessionId: sd.id, content: text, queue: sd.busy });
    interaction.messageResult(res);
    if (res.builtin) return scheduleRender();
    if (!res.queued) sd.busy = true;
    else toast("Queued: it runs after the current turn.");
    scheduleRender();
  } catch (err) {
    input.value = text; // nothing is lost
    autosize();
    if (err instanceof RpcError && err.code === -32003) toast("The agent is busy: wait for it or abort (Esc).", "error");
    else toast(`Not sent: ${err.message}`, "error");
  }
}

async function abortTurn() {
  const sd = current();
  if (!sd || !sd.busy) return;
  try {
    await rpc.call("agent.abort", { sessionId: sd.id });
  } catch (err) {
    toast(`Abort failed: ${err.message}`, "error");
  }
}

async function forkFrom(eventId) {
  const sd = current();
  try {
    const res = await rpc.call("session.fork", { eventId });
    const session = res.session;
    state.sessions.set(session.id, session);
    renderSessions();
    await openSession(session.id);
    toast(`Forked into a new session from ${sd ? "this message" : "the event"}.`);
  } catch (err) {
    toast(`Fork failed: ${err.message}`, "error");
  }
}

async function rewindTo(eventId) {
  const sd = current();
  if (!sd) return;
  if (sd.busy) return toast("Abort the running turn before rewinding.", "error");
  try {
    const session = await rpc.call("session.rewind", { sessionId: sd.id, eventId });
    sd.setSession(session, "rewind");
    state.sessions.set(session.id, session);
    scheduleRender();
    renderSessions();
  } catch (err) {
    toast(`Rewind failed: ${err.message}`, "error");
  }
}

async function switchModel(value) {
  const sd = current();
  if (!sd) return;
  const [provider, model] = value.split("::");
  try {
    await rpc.call("model.switch", { sessionId: sd.id, model, provider });
    refreshSessionSoon(sd.id);
    toast(`Model: ${model}`);
  } catch (err) {
    toast(`Model switch failed: ${err.message}`, "error");
    $("model-select").dataset.sig = "";
    renderHeader(sd);
  }
}

function selectInTree(eventId) {
  if (!transcript.highlight(eventId)) {
    highlightTreeNode(eventId);
    toast("That message is on another branch (left by a rewind): fork from it to continue there.");
  }
}

function highlightTreeNode(eventId) {
  const node = $("tree").querySelector(`[data-event-id="${CSS.escape(eventId)}"]`);
  if (!node) return false;
  node.classList.remove("highlight");
  void node.offsetWidth;
  node.classList.add("highlight");
  setTimeout(() => node.classList.remove("highlight"), 3000);
  node.dataset.highlighted = "true";
  node.scrollIntoView({ block: "center" });
  return true;
}

function jumpToEvent(eventId) {
  renderCurrent();
  if (transcript.highlight(eventId)) return;
  // Not on the path: a branch left by a rewind, or an event we do not draw.
  const sd = current();
  let id = eventId;
  while (id && sd && !$("tree").querySelector(`[data-event-id="${CSS.escape(id)}"]`)) id = sd.events.get(id)?.parentId;
  if (id && highlightTreeNode(id)) toast("That event is on another branch of this session (left by a rewind): it is highlighted in the tree.");
}

// ---------------------------------------------------------------------------
// Search

let searchTimer = null;
let searchSeq = 0;
$("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(runSearch, 200);
});
$("search").addEventListener("keydown", (e) => {
  if (e.key === "Escape") {
    e.stopPropagation();
    closeSearch();
  } else if (e.key === "Enter") {
    e.preventDefault();
    clearTimeout(searchTimer);
    const first = $("search-results").querySelector("[data-testid=search-result]");
    if (first) first.click();
    else runSearch();
  }
});

function closeSearch() {
  $("search").value = "";
  $("search-results").hidden = true;
  setChildren($("search-results"));
}

async function runSearch() {
  const query = $("search").value.trim();
  const box = $("search-results");
  if (!query) return closeSearch();
  const seq = ++searchSeq;
  let hits;
  try {
    hits = (await rpc.call("events.search", { query, limit: 30 })).hits || [];
  } catch (err) {
    if (seq !== searchSeq) return;
    setChildren(box, h("div", { class: "muted pad small" }, `Search failed: ${err.message}`));
    box.hidden = false;
    return;
  }
  if (seq !== searchSeq) return;
  const rows = hits.map((hit) => {
    const s = state.sessions.get(hit.sessionId);
    return h(
      "button",
      {
        type: "button",
        class: "search-result",
        testid: "search-result",
        dataset: { eventId: hit.eventId, sessionId: hit.sessionId },
        onclick: () => {
          closeSearch();
          openSession(hit.sessionId, { eventId: hit.eventId });
        },
      },
      h("span", { class: "hit-meta muted" }, `${typeLabel(hit.type)} · ${s ? sessionTitle(s, state.data.get(s.id)) : `session …${shortId(hit.sessionId)}`} · ${fmtTime(hit.timestamp)}`),
      h("span", { class: "hit-snippet" }, markedSnippet(hit.snippet)),
    );
  });
  setChildren(box, rows.length ? rows : h("div", { class: "muted pad small", testid: "search-empty" }, `No match for “${query}”.`));
  box.hidden = false;
}

function typeLabel(type) {
  return { "message.user": "you", "message.assistant": "agent", "tool.call": "tool call", "tool.result": "tool result" }[type] || type;
}

// ---------------------------------------------------------------------------
// New session dialog

function openNewSessionDialog() {
  const dlg = $("new-session-dialog");
  const info = state.info || {};
  const providers = [...new Set([...(info.providers || []), ...state.models.map((m) => m.provider)])];
  const cur = current();
  const defaultProvider = cur?.session.provider || info.defaultProvider || providers[0] || "anthropic";
  if (!providers.includes(defaultProvider)) providers.unshift(defaultProvider);
  setChildren($("ns-provider"), providers.map((p) => h("option", { value: p }, p)));
  $("ns-provider").value = defaultProvider;
  fillModels(defaultProvider, cur?.session.model || info.defaultModel);
  $("ns-cwd").value = cur?.session.workingDirectory || localStorage.getItem("tron.cwd") || "";
  $("ns-title").value = "";
  $("ns-error").hidden = true;
  dlg.showModal();
  $("ns-cwd").focus();
  $("ns-cwd").select();
}

function fillModels(provider, preferred) {
  const models = state.models.filter((m) => m.provider === provider);
  setChildren($("ns-models"), models.map((m) => h("option", { value: m.id }, m.name || m.id)));
  const info = state.info || {};
  const fallback = provider === info.defaultProvider ? info.defaultModel : models[0]?.id;
  $("ns-model").value = preferred && (models.some((m) => m.id === preferred) || !models.length) ? preferred : fallback || "";
}

$("ns-provider").addEventListener("change", () => fillModels($("ns-provider").value));
$("ns-cancel").addEventListener("click", () => $("new-session-dialog").close());
$("new-session-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const params = {
    workingDirectory: $("ns-cwd").value.trim(),
    provider: $("ns-provider").value,
    model: $("ns-model").value.trim(),
  };
  const title = $("ns-title").value.trim();
  if (title) params.title = title;
  try {
    const session = await rpc.call("session.create", params);
    localStorage.setItem("tron.cwd", params.workingDirectory);
    state.sessions.set(session.id, session);
    $("new-session-dialog").close();
    renderSessions();
    await openSession(session.id);
    $("composer-input").focus();
  } catch (err) {
    const details = err.data?.errors ? ` (${err.data.errors.map((x) => x.msg || x.message || JSON.stringify(x)).join("; ")})` : "";
    $("ns-error").textContent = `${err.message}${details}`;
    $("ns-error").hidden = false;
  }
});

// ---------------------------------------------------------------------------
// Composer and keyboard

const input = $("composer-input");
function autosize() {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 240)}px`;
}
input.addEventListener("input", autosize);
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    sendMessage();
  }
});
$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  sendMessage();
});
$("abort-btn").addEventListener("click", abortTurn);
$("new-session").addEventListener("click", openNewSessionDialog);
$("empty-new").addEventListener("click", openNewSessionDialog);
$("model-select").addEventListener("change", (e) => switchModel(e.target.value));
$("tree-toggle").addEventListener("click", () => $("app").classList.toggle("tree-open"));

document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && !$("new-session-dialog").open) {
    if (current()?.busy) {
      e.preventDefault();
      abortTurn();
    }
  } else if (e.key === "/" && document.activeElement === document.body) {
    e.preventDefault();
    $("search").focus();
  }
});
document.addEventListener("click", (e) => {
  if (!e.target.closest(".search")) $("search-results").hidden = true;
});

$("session-list").addEventListener("click", (e) => {
  const a = e.target.closest("[data-session-id]");
  if (!a) return;
  e.preventDefault();
  openSession(a.dataset.sessionId);
});

function hashState() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { sessionId: params.get("s"), eventId: params.get("e") };
}
window.addEventListener("hashchange", () => {
  const { sessionId, eventId } = hashState();
  if (sessionId && sessionId !== state.currentId) openSession(sessionId, { eventId });
});

// ---------------------------------------------------------------------------
// Toasts

function toast(message, kind = "info") {
  const el = h("div", { class: `toast ${kind}`, testid: "toast", role: kind === "error" ? "alert" : "status" }, message);
  $("toasts").append(el);
  setTimeout(() => el.classList.add("leaving"), 5000);
  setTimeout(() => el.remove(), 5400);
}

function isNetwork(err) {
  return err instanceof RpcError && (err.code === -32099 || err.code === -32098);
}

// ---------------------------------------------------------------------------

// The login URL as this server prints it (the token itself only the user has).
$("login-url-hint").textContent = `${location.origin}/login?token=…`;

// Running tools show their elapsed time.
setInterval(() => {
  const sd = current();
  if (sd && sd.busy) transcript.render();
}, 500);

renderCurrent();
renderSessions();
rpc.start();
