// The new-session dialog: working directory, provider, model, title.
//
// The working directory starts as the open session's, else the one of the most
// recently active session (the last one used, from any browser), else the
// home directory of the user running tron-server. Providers without an API key
// are listed but cannot be picked (they would fail at the first message).

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
  }

  /** The directory the dialog proposes (see the module comment). */
  defaultDirectory() {
    const cur = this.current();
    if (cur?.session.workingDirectory) return cur.session.workingDirectory;
    const recent = this.recentSessions().find((s) => s.workingDirectory && !s.parentSessionId);
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

  async _create() {
    const params = {
      workingDirectory: this.$("ns-cwd").value.trim(),
      provider: this.$("ns-provider").value,
      model: this.$("ns-model").value.trim(),
    };
    const title = this.$("ns-title").value.trim();
    if (title) params.title = title;
    try {
      const session = await this.rpc.call("session.create", params);
      this.dialog.close();
      await this.onCreated(session);
    } catch (err) {
      const details = err.data?.errors ? ` (${err.data.errors.map((x) => x.msg || x.message || JSON.stringify(x)).join("; ")})` : "";
      this.$("ns-error").textContent = `${err.message}${details}`;
      this.$("ns-error").hidden = false;
    }
  }
}
