// JSON-RPC 2.0 over one WebSocket, with reconnection.
//
// Status ("status" event, detail = {status, retryInMs, attempt}):
//   connecting   – opening the socket
//   connected    – open; an "open" event follows, the app re-subscribes and syncs
//   offline      – closed; a reconnect is scheduled with exponential backoff
//   unauthorized – the server is up but refuses us (its token changed at a
//                  restart, or the cookie expired): the user must log in again.
//                  We keep retrying slowly, so logging in in another tab (which
//                  sets the cookie for this origin) reconnects this page.

export class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.data = data || {};
  }
  get retryable() {
    return Boolean(this.data.retryable);
  }
}

/** Close codes that mean "you are not allowed": log in again. */
const AUTH_CLOSE_CODES = new Set([1008, 4001, 4003, 4401, 4403]);

export class RpcClient extends EventTarget {
  constructor(url, { minDelayMs = 300, maxDelayMs = 8000, authRetryMs = 2000 } = {}) {
    super();
    this.url = url;
    this.minDelayMs = minDelayMs;
    this.maxDelayMs = maxDelayMs;
    this.authRetryMs = authRetryMs;
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map();
    this.status = "connecting";
    this.attempt = 0;
    this.timer = null;
    this.stopped = false;
  }

  start() {
    this.stopped = false;
    this._open();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000, "client stopped");
  }

  /** Reconnect at once (e.g. after logging in again). */
  reconnectNow() {
    clearTimeout(this.timer);
    this.attempt = 0;
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) this.ws.close(4000, "reconnect");
    else this._open();
  }

  get connected() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN && this.status === "connected";
  }

  _setStatus(status, extra = {}) {
    this.status = status;
    this.dispatchEvent(new CustomEvent("status", { detail: { status, attempt: this.attempt, ...extra } }));
  }

  _open() {
    if (this.stopped) return;
    this._setStatus(this.status === "unauthorized" ? "unauthorized" : "connecting");
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (err) {
      this._scheduleReconnect(false, 1006);
      return;
    }
    this.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.attempt = 0;
      this._setStatus("connected");
      this.dispatchEvent(new Event("open"));
    };
    ws.onmessage = (ev) => this._onFrame(ev.data);
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      const err = new RpcError(-32099, "Connection to tron-server lost", { category: "network", retryable: true });
      for (const { reject, timer } of this.pending.values()) {
        clearTimeout(timer);
        reject(err);
      }
      this.pending.clear();
      if (opened) this.dispatchEvent(new Event("close"));
      this._scheduleReconnect(opened, ev.code);
    };
    ws.onerror = () => {
      /* onclose follows with the details */
    };
  }

  async _scheduleReconnect(wasOpen, code) {
    if (this.stopped) return;
    this.attempt += 1;
    let unauthorized = AUTH_CLOSE_CODES.has(code);
    if (!unauthorized && !wasOpen) {
      // A refused upgrade looks like 1006 to a page. If /health answers, the
      // server is up and refused *us*: the token changed or the cookie is gone.
      unauthorized = await this._serverIsUp();
    }
    if (this.stopped) return;
    let delay;
    if (unauthorized) {
      delay = this.authRetryMs;
      this._setStatus("unauthorized", { retryInMs: delay });
    } else {
      const base = Math.min(this.maxDelayMs, this.minDelayMs * 2 ** Math.min(this.attempt - 1, 8));
      delay = Math.round(base * (0.75 + Math.random() * 0.5));
      this._setStatus("offline", { retryInMs: delay, closeCode: code });
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this._open(), delay);
  }

  async _serverIsUp() {
    try {
      const res = await fetch("/health", { cache: "no-store", credentials: "same-origin" });
      return res.ok;
    } catch {
      return false;
    }
  }

  _onFrame(raw) {
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch {
      console.warn("tron: unparseable frame", raw);
      return;
    }
    for (const m of Array.isArray(msg) ? msg : [msg]) {
      if (m.id !== undefined && m.id !== null && (m.result !== undefined || m.error !== undefined)) {
        const p = this.pending.get(m.id);
        if (!p) continue;
        this.pending.delete(m.id);
        clearTimeout(p.timer);
        if (m.error) p.reject(new RpcError(m.error.code, m.error.message, m.error.data));
        else p.resolve(m.result);
      } else if (m.method) {
        this.dispatchEvent(new CustomEvent("notification", { detail: { method: m.method, params: m.params || {} } }));
      }
    }
  }

  /** Call `method`; rejects with RpcError (server error, timeout or not connected). */
  call(method, params = {}, { timeoutMs = 30000 } = {}) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(
        new RpcError(-32099, "Not connected to tron-server (reconnecting…)", { category: "network", retryable: true }),
      );
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new RpcError(-32098, `${method} timed out after ${timeoutMs / 1000} s`, { category: "network", retryable: true }));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }
}
