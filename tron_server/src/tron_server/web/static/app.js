// The Tron web chat: wires the RPC client, the session list, the transcript,
// the tree, search and the composer together. No build step, no dependencies.
//
// Features are modules: features.js installs each with `app` (below), the
// page's API — the RPC client and state, the open session, named slots in
// index.html (data-slot) to put UI in, notification and composer-key hooks,
// and the actions (send, abort, fork, rewind, …), which a feature may wrap.

import { RpcClient, RpcError } from "./rpc.js";
import { SessionData, contentText, isPrompt } from "./model.js";
import { Transcript } from "./transcript.js";
import { TreeView } from "./tree.js";
import { Layout } from "./layout.js";
import { SessionList, sessionTitle } from "./sessions.js";
import { Search } from "./search.js";
import { NewSessionDialog } from "./newsession.js";
import { FolderNotice } from "./folder.js";
import { renderModelPicker } from "./modelpicker.js";
import { toast } from "./toast.js";
import { installFeatures } from "./features.js";
import { Interaction } from "./interaction.js";
import { setChildren, fmtTokens, fmtCost, shortId } from "./dom.js";

const $ = (id) => document.getElementById(id);

const state = {
  /** @type {Map<string, object>} session id → Session (from session.list and notifications) */
  sessions: new Map(),
  /** @type {Map<string, SessionData>} sessions opened in this page */
  data: new Map(),
  currentId: null,
  models: [],
  /** model.list's providers: [{id, configured, keyEnv, baseUrl, hint}] */
  providers: [],
  info: null,
  /** the session we are subscribed to (one at a time) */
  subscribedId: null,
  openToken: 0,
};

const wsUrl = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/rpc`;
const rpc = new RpcClient(wsUrl);
const layout = new Layout($("app"), { sidebar: $("sidebar"), tree: $("tree-panel"), main: $("chat"), scrim: $("scrim") });
// Exposed for debugging from the console and for the browser tests.
window.tron = { rpc, state, layout };

/** What the page does; features may wrap an action (e.g. a dialog before a rewind). */
const actions = {
  send: (content) => sendMessage(content),
  abort: () => abortTurn(),
  fork: (eventId) => forkFrom(eventId),
  rewind: (eventId, opts) => rewindTo(eventId, opts),
  retry: (errorEventId, opts) => retryFailed(errorEventId, opts),
  open: (sessionId, opts) => openSession(sessionId, opts),
  switchModel: (provider, model) => switchModel(provider, model),
};

const transcript = new Transcript($("transcript"), {
  onFork: (id) => actions.fork(id),
  onRewind: (id) => rewindFromMessage(id),
  onOpenSession: (id) => actions.open(id),
  onRetry: (id, opts) => actions.retry(id, opts),
  titleOf: (id) => (state.sessions.has(id) ? sessionTitle(state.sessions.get(id)) : null),
});
// Questions, approvals, the permission mode and slash commands (interaction.js).
const interaction = new Interaction({
  rpc,
  toast: (message, kind) => toast(message, kind),
  sessionId: () => state.subscribedId,
  openSession: (id) => openSession(id),
  cwd: () => current()?.session?.workingDirectory ?? null,
});
const tree = new TreeView($("tree"), {
  onSelect: (id) => {
    layout.picked("tree");
    selectInTree(id);
  },
  onFork: (id) => {
    layout.picked("tree");
    actions.fork(id);
  },
  onRewind: (id) => {
    layout.picked("tree");
    rewindFromMessage(id);
  },
});
const sessionList = new SessionList($("session-list"), state);
const search = new Search({
  input: $("search"),
  box: $("search-results"),
  rpc,
  sessions: () => state.sessions,
  refreshSessions: () => refreshSessions(),
  onOpen: (sessionId, eventId) => {
    layout.picked("sidebar");
    actions.open(sessionId, { eventId });
  },
});
const newSession = new NewSessionDialog({
  rpc,
  state,
  current,
  recentSessions: () => sessionList.sorted(),
  onCreated: async (session) => {
    state.sessions.set(session.id, session);
    renderSessions();
    await openSession(session.id);
    $("composer-input").focus();
  },
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

const folderNotice = new FolderNotice({
  rpc,
  state,
  recentSessions: () => sessionList.sorted(),
  onMoved: (session) => {
    state.sessions.set(session.id, session);
    const sd = state.data.get(session.id);
    if (sd) sd.setSession(session, "snapshot");
    renderSessions();
    renderCurrent();
  },
});

function current() {
  return state.currentId ? state.data.get(state.currentId) : null;
}

function renderCurrent() {
  const sd = current();
  const has = Boolean(sd);
  $("empty").hidden = has;
  $("composer").hidden = !has;
  $("chat").dataset.hasSession = String(has);
  $("transcript").hidden = !has;
  folderNotice.render(sd);
  if (!sd) {
    setChildren($("tree"));
    $("session-title").textContent = "tron";
    $("tree-stats").textContent = "";
    document.title = "Tron";
    return;
  }
  transcript.render();
  tree.render(sd);
  renderHeader(sd);
  renderComposerState(sd);
}

function renderHeader(sd) {
  const s = sd.session;
  const title = sessionTitle(s);
  $("session-title").textContent = title;
  $("session-title").title = title;
  document.title = `${title} · Tron`;
  $("session-cwd").textContent = s.workingDirectory || "";
  $("session-cwd").title = s.workingDirectory || "";
  const status = $("session-status");
  status.textContent = s.status === "ended" ? "ended" : sd.busy ? "working" : "";
  status.hidden = !status.textContent;
  status.dataset.state = s.status === "ended" ? "ended" : sd.busy ? "busy" : "idle";
  const usage = $("session-usage");
  const t = sd.usageTotals();
  // Prompts (the user's messages) and model calls (a prompt may take several, with
  // tools between); tokens and cost from the session's own calls, the Session
  // row's counters when no call recorded usage.
  const parts = [`${t.prompts} prompt${t.prompts === 1 ? "" : "s"}`];
  if (t.turns !== t.prompts) parts.push(`${t.turns} model call${t.turns === 1 ? "" : "s"}`);
  parts.push(`in ${fmtTokens(t.turns ? t.input : s.inputTokens)}`, `out ${fmtTokens(t.turns ? t.output : s.outputTokens)}`);
  const cacheRead = t.turns ? t.cacheRead : s.cacheReadTokens;
  if (cacheRead) parts.push(`cache ${fmtTokens(cacheRead)}`);
  parts.push(t.turns ? (t.costKnown || t.cost ? fmtCost(t.cost) : "cost unknown") : fmtCost(s.cost));
  // session.get reports the session with all its sub-agents; keep the last one seen.
  if (s.totalWithChildren) sd.totalWithChildren = s.totalWithChildren;
  const all = sd.totalWithChildren;
  if (all && all.sessions > 1) parts.push(`with sub-agents ${fmtCost(all.cost)}`);
  usage.textContent = parts.join(" · ");
  usage.dataset.cost = String(t.cost);
  usage.dataset.prompts = String(t.prompts);
  usage.dataset.calls = String(t.turns);
  renderModelPicker($("model-select"), s, state.models, state.providers);
  const branches = [...sd.events.values()].filter((e) => e.type === "message.user" || e.type === "message.assistant").length;
  $("tree-stats").textContent = `${branches} messages · head …${shortId(sd.headId)}`;
}

function renderComposerState(sd) {
  const ended = sd.session.status === "ended";
  const narrow = layout.mode === "narrow";
  $("composer-input").disabled = ended;
  $("composer-input").placeholder = ended
    ? narrow ? "Ended: fork it to continue" : "This session has ended: fork it from any message to continue"
    : narrow ? "Message the agent" : "Message the agent — Enter to send, Shift+Enter for a new line, Esc to abort";
  $("abort-btn").hidden = !sd.busy;
  $("abort-btn").disabled = !rpc.connected;
  $("send-btn").textContent = sd.busy ? "Queue" : "Send";
  $("send-btn").title = sd.busy ? "The agent is working: this message runs after the current one" : "Send (Enter)";
  $("send-btn").disabled = ended || !rpc.connected;
}

layout.addEventListener("change", () => {
  const sd = current();
  if (sd) renderComposerState(sd);
});

// ---------------------------------------------------------------------------
// Session list

function renderSessions() {
  sessionList.render();
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

const notificationHooks = [];

rpc.addEventListener("notification", (e) => {
  const { method, params } = e.detail;
  handleNotification(method, params);
  for (const hook of notificationHooks) {
    try {
      hook(method, params);
    } catch (err) {
      console.error("tron: a notification hook failed", err);
    }
  }
});

function handleNotification(method, params) {
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
  // agent.error: the stored failure's card (or, for a failure that stores
  // nothing, the live error line) shows it, once.
  if (sd.applyNotification(method, data)) scheduleRender();
  if (method === "agent.turn_end" || method === "agent.complete") refreshSessionSoon(sd.id);
  // A failed run ends with agent.error, then agent.complete (stop reason "error"): the failure stays said.
  if (method === "agent.complete" && data.stopReason !== "error") announce(data.stopReason === "aborted" ? "The agent stopped (aborted)." : "The agent finished.");
  else if (method === "agent.error") announce(`The turn failed: ${data.message || "an error"}`);
}

function announce(text) {
  $("announcer").textContent = text;
}

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
  if (models.status === "fulfilled") {
    state.models = models.value.models || [];
    state.providers = models.value.providers || [];
  }
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

/** Send the composer's text (or `content`: a string or content blocks). */
async function sendMessage(content = null) {
  const sd = current();
  const input = $("composer-input");
  const fromComposer = content === null;
  const text = fromComposer ? input.value : content;
  if (!sd || (typeof text === "string" && !text.trim())) return false;
  if (fromComposer) {
    input.value = "";
    autosize();
  }
  try {
    if (state.subscribedId !== sd.id) await attach(sd.id);
    await leaveOutFailed(sd, text);
    const res = await rpc.call("agent.message", { sessionId: sd.id, content: text, queue: sd.busy });
    interaction.messageResult(res);
    if (res.builtin) {
      scheduleRender();
      return true;
    }
    if (!res.queued) sd.busy = true;
    else toast("Queued: it runs after the current turn.");
    sd.live.error = null;
    scheduleRender();
    return true;
  } catch (err) {
    if (fromComposer) {
      input.value = text; // nothing is lost
      autosize();
    }
    if (err instanceof RpcError && err.code === -32003) toast("The agent is busy: wait for it or abort (Esc).", "error");
    else toast(`Not sent: ${err.message}`, "error");
    return false;
  }
}

/**
 * A prompt whose turn failed before any reply would reach the model merged with the
 * next one: the next goes in its place (a rewind to before it; the failed attempt
 * stays in the tree). Commands (a leading "/") leave the history as it is.
 */
async function leaveOutFailed(sd, text) {
  if (sd.busy || (typeof text === "string" && text.trimStart().startsWith("/"))) return;
  const failed = sd.unansweredFailedPrompt();
  if (!failed || !failed.parentId) return;
  if (await rewindTo(failed.parentId)) {
    toast("The message before failed with no reply: it is left out, the model does not see it (it stays in the tree).");
  }
}

/**
 * Rewind from a message's (or the tree's) Rewind: to one of yours, it goes to just
 * before it and puts its text in the composer to edit (rewinding *to* it would send
 * the next prompt merged with it); to a reply, to the reply.
 */
async function rewindFromMessage(eventId) {
  const sd = current();
  const ev = sd && sd.events.get(eventId);
  if (!ev || ev.type !== "message.user" || !ev.parentId || !isPrompt(ev)) return actions.rewind(eventId);
  if (!(await actions.rewind(ev.parentId))) return false;
  const input = $("composer-input");
  input.value = contentText(ev.payload.content);
  autosize();
  input.focus();
  input.setSelectionRange(input.value.length, input.value.length);
  toast("Rewound to before your message: it is in the composer to edit and send.");
  return true;
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
    toast(`Forked into “${sessionTitle(session)}” from ${sd ? "this message" : "the event"}.`);
  } catch (err) {
    toast(`Fork failed: ${err.message}`, "error");
  }
}

async function rewindTo(eventId, { restoreFiles = false, force = false } = {}) {
  const sd = current();
  if (!sd) return false;
  if (sd.busy) {
    toast("Abort the running turn before rewinding.", "error");
    return false;
  }
  try {
    // restoreFiles: the files the agent changed go back too (files.js asks first).
    const params = restoreFiles ? { sessionId: sd.id, eventId, restoreFiles, force } : { sessionId: sd.id, eventId };
    const session = await rpc.call("session.rewind", params);
    sd.setSession(session, "rewind");
    state.sessions.set(session.id, session);
    scheduleRender();
    renderSessions();
    return true;
  } catch (err) {
    toast(`Rewind failed: ${err.message}`, "error");
    return false;
  }
}

/**
 * After a failed turn: go back to before the prompt that failed (the attempt
 * stays in the tree, off the path), then send it again, or put it in the
 * composer to edit first.
 */
async function retryFailed(errorEventId, { edit = false } = {}) {
  const sd = current();
  if (!sd) return;
  const prompt = sd.promptBefore(errorEventId);
  if (!prompt || !prompt.parentId) return toast("The message that failed is not on this branch any more.", "error");
  const content = prompt.payload.content;
  if (!(await actions.rewind(prompt.parentId))) return;
  if (edit) {
    const input = $("composer-input");
    input.value = contentText(content);
    autosize();
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
    return;
  }
  await sendMessage(content);
}

async function switchModel(provider, model) {
  const sd = current();
  if (!sd) return;
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
  if (!layout.visible("tree")) layout.open("tree");
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
// Composer and keyboard

const input = $("composer-input");
const composerKeyHooks = [];
function autosize() {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 240)}px`;
}
input.addEventListener("input", autosize);
input.addEventListener("keydown", (e) => {
  // A feature (e.g. command completion) may take the key first.
  for (const hook of composerKeyHooks) if (hook(e) === true || e.defaultPrevented) return;
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    actions.send();
  }
});
$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  actions.send();
});
$("abort-btn").addEventListener("click", () => actions.abort());
$("new-session").addEventListener("click", () => {
  layout.picked("sidebar");
  newSession.open();
});
$("empty-new").addEventListener("click", () => newSession.open());
$("model-select").addEventListener("change", (e) => {
  const [provider, model] = e.target.value.split("::");
  actions.switchModel(provider, model);
});
for (const btn of document.querySelectorAll("[data-toggles]")) {
  btn.addEventListener("click", () => layout.toggle(btn.dataset.toggles, btn));
}
for (const btn of document.querySelectorAll("[data-closes]")) btn.addEventListener("click", () => layout.close());

document.addEventListener("keydown", (e) => {
  if (e.defaultPrevented) return;
  if (e.key === "Escape" && !document.querySelector("dialog[open]")) {
    if (current()?.busy) {
      e.preventDefault();
      actions.abort();
    }
  } else if (e.key === "/" && document.activeElement === document.body) {
    e.preventDefault();
    if (!layout.visible("sidebar")) layout.open("sidebar");
    $("search").focus();
  }
});

$("session-list").addEventListener("click", (e) => {
  const a = e.target.closest("[data-session-id]");
  if (!a) return;
  e.preventDefault();
  layout.picked("sidebar");
  actions.open(a.dataset.sessionId);
});

function hashState() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { sessionId: params.get("s"), eventId: params.get("e") };
}
window.addEventListener("hashchange", () => {
  const { sessionId, eventId } = hashState();
  if (sessionId && sessionId !== state.currentId) actions.open(sessionId, { eventId });
});

function isNetwork(err) {
  return err instanceof RpcError && (err.code === -32099 || err.code === -32098);
}

// ---------------------------------------------------------------------------
// The API features get (see features.js)

const app = {
  rpc,
  state,
  layout,
  actions,
  toast,
  current,
  render: scheduleRender,
  /** The element of a named slot in index.html (data-slot="…"). */
  slot: (name) => document.querySelector(`[data-slot="${CSS.escape(name)}"]`),
  /** `fn(method, params)` after the page handled each notification. */
  onNotification: (fn) => notificationHooks.push(fn),
  /** `fn(keydownEvent)` before the composer handles a key; return true (or preventDefault) to take it. */
  onComposerKey: (fn) => composerKeyHooks.push(fn),
  composer: { input, autosize },
};
installFeatures(app);

// ---------------------------------------------------------------------------

// The login URL as this server prints it (the token itself only the user has).
$("login-url-hint").textContent = `${location.origin}/login?token=…`;

// Other sessions change without notifying this page (only the open one is
// subscribed): the list is refreshed when the page comes back into view, and
// every minute while it is visible.
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible" && rpc.connected) refreshSessionsSoon();
});
setInterval(() => {
  if (document.visibilityState === "visible" && rpc.connected) refreshSessions();
}, 60_000);

// Running tools show their elapsed time.
setInterval(() => {
  const sd = current();
  if (sd && sd.busy) transcript.render();
}, 500);

renderCurrent();
renderSessions();
rpc.start();
