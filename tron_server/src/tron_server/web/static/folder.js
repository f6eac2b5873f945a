// A session whose folder is not on the server's machine (an imported session, a folder
// removed since: the Session's `workingDirectoryExists` is false) opens with a notice
// above the composer: where it worked, that its tools cannot act there, and a folder
// to continue it in (the most recent folder that exists, else the user's home), which
// `session.resume {workingDirectory}` moves it to.

import { h, setChildren } from "./dom.js";
import { errorText } from "./newsession.js";

export class FolderNotice {
  /**
   * @param {{rpc: object, state: object, recentSessions: () => object[],
   *          onMoved: (session: object) => void}} opts
   */
  constructor({ rpc, state, recentSessions, onMoved }) {
    Object.assign(this, { rpc, state, recentSessions, onMoved });
    this.box = h("div", { class: "banner folder-missing", testid: "folder-missing", role: "alert", hidden: true });
    document.querySelector('[data-slot="composer-before"]').before(this.box);
    this.shownFor = null;
  }

  /** A folder to propose: the most recent one that exists, else the user's home. */
  proposal() {
    const recent = this.recentSessions().find((s) => s.workingDirectory && s.workingDirectoryExists === true);
    return recent ? recent.workingDirectory : this.state.info?.userHome || "";
  }

  /** Show the notice for `sd`'s session (or hide it: none open, or its folder is here). */
  render(sd) {
    const s = sd?.session;
    const missing = Boolean(s && s.workingDirectoryExists === false);
    this.box.hidden = !missing;
    if (!missing) {
      this.shownFor = null;
      return;
    }
    const key = `${s.id}|${s.workingDirectory}`;
    if (this.shownFor === key) return; // keep what the user typed
    this.shownFor = key;
    const input = h("input", {
      testid: "folder-missing-input", value: this.proposal(), spellcheck: "false",
      autocomplete: "off", "aria-label": "The folder to continue in",
    });
    const error = h("p", { class: "form-error", testid: "folder-missing-error", hidden: true });
    const form = h(
      "form",
      { class: "folder-form", onsubmit: (e) => { e.preventDefault(); this._move(s.id, input.value.trim(), error); } },
      input,
      h("button", { type: "submit", class: "primary", testid: "folder-missing-continue" }, "Continue here"),
    );
    setChildren(
      this.box,
      h(
        "div",
        {},
        h("p", {}, "This session worked in ", h("code", {}, s.workingDirectory),
          ", which is not a folder on this machine (an imported session?): its tools cannot act there. Continue it in:"),
        form,
        error,
      ),
    );
  }

  async _move(sessionId, folder, error) {
    try {
      const session = await this.rpc.call("session.resume", { sessionId, workingDirectory: folder });
      error.hidden = true;
      this.onMoved(session);
    } catch (err) {
      error.textContent = errorText(err);
      error.hidden = false;
    }
  }
}
