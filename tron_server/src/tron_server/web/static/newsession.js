// The new-session dialog: working directory, provider, model, title.
//
// The working directory starts as the open session's, else the one of the most
// recently active session (the last one used, from any browser), else the
// home directory of the user running tron-server. Providers without an API key
// are listed but cannot be picked (they would fail at the first message).
//
// Folder trust: before creating a session in a folder the user has not trusted that
// defines configuration of its own (hooks, allow rules, a mode, shell in command files,
// agents, MCP servers: trust.get's `defines`), the dialog asks, listing what it defines:
// "Trust this folder" (trust.set, then create) or "Continue without its settings".

import { h, setChildren } from "./dom.js";
import { providerLabel } from "./modelpicker.js";

export class NewSessionDialog {
  /**
   * @param {{rpc: object, state: object, current: () => object | null, recentSessions: () => object[],
   *          onCreated: (session: object) => Promise<void>}} opts
   */
  constructor({ rpc, state, current, recentSessions, onCreated }) {
    Object.assign(this, { rpc, state, current, recentSessions, onCreated });
    this.dialog = document.getElementById("new-session-dialog");
    this.$ = (id) => document.getElementById(id);
    this.$("ns-provider").addEventListener("change", () => {
      this._fillModels(this.$("ns-provider").value);
      this._providerNote();
    });
    this.$("ns-cancel").addEventListener("click", () => this.dialog.close());
    this.$("new-session-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this._create();
    });
    this.$("ns-trust-yes").addEventListener("click", () => this._create({ trust: true }));
    this.$("ns-trust-no").addEventListener("click", () => this._create({ trust: false }));
    this.$("ns-cwd").addEventListener("input", () => this._askTrust(null));
  }

  /** Show (a trust.get answer) or hide (null) the trust question. */
  _askTrust(answer) {
    const box = this.$("ns-trust");
    box.hidden = !answer;
    this.$("ns-menu").hidden = Boolean(answer);
    if (!answer) return;
    this.$("ns-trust-path").textContent = answer.path;
    setChildren(this.$("ns-trust-items"), definedItems(answer.defines).map((item) => h("li", {}, item)));
    this.$("ns-trust-no").focus();
  }

  /** The directory the dialog proposes (see the module comment): never a folder that does
   * not exist on the server's machine (an imported session's, `workingDirectoryExists`). */
  defaultDirectory() {
    const here = (s) => s?.workingDirectory && s.workingDirectoryExists !== false;
    const cur = this.current();
    if (here(cur?.session)) return cur.session.workingDirectory;
    const recent = this.recentSessions().find((s) => here(s) && !s.parentSessionId);
    if (recent) return recent.workingDirectory;
    return this.state.info?.userHome || "";
  }

  open() {
    const info = this.state.info || {};
    const status = new Map((this.state.providers || []).map((p) => [p.id, p]));
    const providers = [...new Set([...(this.state.providers || []).map((p) => p.id), ...(info.providers || []), ...this.state.models.map((m) => m.provider)])];
    const cur = this.current();
    let provider = cur?.session.provider || info.defaultProvider || providers[0] || "anthropic";
    if (status.get(provider)?.configured === false) provider = providers.find((p) => status.get(p)?.configured !== false) || provider;
    if (!providers.includes(provider)) providers.unshift(provider);
    setChildren(
      this.$("ns-provider"),
      providers.map((p) => {
        const st = status.get(p);
        return h("option", { value: p, disabled: st && !st.configured, title: st?.hint || null }, providerLabel(p, st));
      }),
    );
    this.$("ns-provider").value = provider;
    this._fillModels(provider, cur?.session.provider === provider ? cur.session.model : info.defaultModel);
    this._providerNote();
    this.$("ns-cwd").value = this.defaultDirectory();
    this.$("ns-title").value = "";
    this.$("ns-error").hidden = true;
    this._askTrust(null);
    this.dialog.showModal();
    this.$("ns-cwd").focus();
    this.$("ns-cwd").select();
  }

  _fillModels(provider, preferred) {
    const models = this.state.models.filter((m) => m.provider === provider || (provider.startsWith("openai") && m.provider === "openai"));
    setChildren(this.$("ns-models"), models.map((m) => h("option", { value: m.id }, m.name || m.id)));
    const info = this.state.info || {};
    const fallback = provider === info.defaultProvider ? info.defaultModel : models[0]?.id;
    this.$("ns-model").value = preferred && (models.some((m) => m.id === preferred) || !models.length) ? preferred : fallback || "";
  }

  _providerNote() {
    const p = (this.state.providers || []).find((x) => x.id === this.$("ns-provider").value);
    const note = this.$("ns-provider-note");
    note.textContent = p && !p.configured ? `${p.id} has no API key: ${p.hint}.` : "";
    note.hidden = !note.textContent;
  }

  /**
   * Create the session. `trust`: the answer to the trust question (undefined: not asked
   * yet, so ask first when the folder is untrusted and defines configuration).
   */
  async _create({ trust } = {}) {
    const params = {
      workingDirectory: this.$("ns-cwd").value.trim(),
      provider: this.$("ns-provider").value,
      model: this.$("ns-model").value.trim(),
    };
    const title = this.$("ns-title").value.trim();
    if (title) params.title = title;
    try {
      if (trust === undefined && params.workingDirectory.startsWith("/")) {
        const answer = await this.rpc.call("trust.get", { path: params.workingDirectory });
        if (!answer.trusted && definedItems(answer.defines).length) {
          this._askTrust(answer);
          return;
        }
      }
      if (trust) await this.rpc.call("trust.set", { path: params.workingDirectory, trusted: true });
      const session = await this.rpc.call("session.create", params);
      this.dialog.close();
      await this.onCreated(session);
    } catch (err) {
      this.$("ns-error").textContent = errorText(err);
      this.$("ns-error").hidden = false;
    }
  }
}

/** An RPC error in one line: its message, then each of `data.errors` it does not
 * already say (-32602's message is the first field's reason: it is not said twice). */
export function errorText(err) {
  const message = String(err.message || err).replace(/ \(and \d+ more errors? in data\.errors\)$/, "");
  const said = (text) => message.includes(text);
  const more = (err.data?.errors || [])
    .map((x) => (x.field ? `${x.field}: ` : "") + (x.msg || x.message || JSON.stringify(x)))
    .filter((text) => !said(text));
  return more.length ? `${message}; ${more.join("; ")}` : message;
}

/** What a folder defines (trust.get's `defines`), as short phrases (as `tron` says them). */
export function definedItems(defines = {}) {
  const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  const items = [];
  if (defines.hooks) items.push(`${count(defines.hooks, "hook", "hooks")} (commands run on events)`);
  if (defines.allowRules) items.push(count(defines.allowRules, "allow rule", "allow rules"));
  if (defines.defaultMode) items.push(`defaultMode ${defines.defaultMode}`);
  if (defines.shellCommands) items.push(`${count(defines.shellCommands, "command that runs", "commands that run")} shell (!\`…\`)`);
  if (defines.agents) items.push(count(defines.agents, "agent definition", "agent definitions"));
  if (defines.mcpServers) items.push(count(defines.mcpServers, "MCP server", "MCP servers"));
  return items;
}
