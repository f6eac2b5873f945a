// The page's layout: the session list (left), the chat, the session tree
// (right), each side panel either docked beside the chat or an overlay drawer,
// depending on the window's width:
//
//   wide    ≥ 1280 px   both panels docked (the tree can be hidden)
//   medium  ≥ 900 px    the list docked, the tree a drawer
//   narrow  < 900 px    both are drawers, opened from the header's buttons
//
// The state is on #app as data attributes (data-layout, data-sidebar,
// data-tree); style.css does the rest. An open drawer is modal: the rest of the
// page is inert, Escape or a click on the scrim closes it, and focus returns to
// the button that opened it.

const BREAKPOINTS = [
  ["wide", "(min-width: 1280px)"],
  ["medium", "(min-width: 900px)"],
];
const TREE_PREF = "tron.treeDocked";

export class Layout extends EventTarget {
  /**
   * @param {HTMLElement} app  the #app element
   * @param {{sidebar: HTMLElement, tree: HTMLElement, main: HTMLElement, scrim: HTMLElement}} parts
   */
  constructor(app, parts) {
    super();
    this.app = app;
    this.parts = parts;
    this.queries = BREAKPOINTS.map(([name, q]) => [name, window.matchMedia(q)]);
    /** the docked tree's visibility in wide mode (a preference, kept across reloads) */
    this.treeDocked = localStorage.getItem(TREE_PREF) !== "false";
    /** which drawer is open (overlay modes only): "sidebar" | "tree" | null */
    this.drawer = null;
    this.returnFocus = null;
    for (const [, mq] of this.queries) mq.addEventListener("change", () => this._modeChanged());
    parts.scrim.addEventListener("click", () => this.close());
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && this.drawer && !e.defaultPrevented && !document.querySelector("dialog[open]")) {
        e.preventDefault();
        e.stopImmediatePropagation();
        this.close();
      }
    }, true);
    this.mode = this._computeMode();
    this._apply();
  }

  _computeMode() {
    for (const [name, mq] of this.queries) if (mq.matches) return name;
    return "narrow";
  }

  _modeChanged() {
    const mode = this._computeMode();
    if (mode === this.mode) return;
    this.mode = mode;
    // A drawer that becomes docked (or the reverse) closes: no modal state survives a resize.
    this.drawer = null;
    this._apply();
  }

  /** Whether `panel` ("sidebar" | "tree") is docked beside the chat in this mode. */
  docked(panel) {
    if (panel === "sidebar") return this.mode !== "narrow";
    return this.mode === "wide";
  }

  /** Whether `panel` is visible now (docked and shown, or an open drawer). */
  visible(panel) {
    if (this.docked(panel)) return panel === "sidebar" || this.treeDocked;
    return this.drawer === panel;
  }

  /** Show or hide a panel: in a docked mode the tree's column, else the drawer. */
  toggle(panel, opener = null) {
    if (this.docked(panel)) {
      if (panel === "tree") {
        this.treeDocked = !this.treeDocked;
        localStorage.setItem(TREE_PREF, String(this.treeDocked));
      }
      this._apply();
      return;
    }
    if (this.drawer === panel) this.close();
    else this.open(panel, opener);
  }

  /** Open `panel` as a drawer (overlay modes); focus goes into it. */
  open(panel, opener = null) {
    if (this.docked(panel)) return;
    this.returnFocus = opener || document.activeElement;
    this.drawer = panel;
    this._apply();
    const el = this.parts[panel];
    const target = el.querySelector("[data-autofocus]") || el.querySelector("button, input, a[href], [tabindex]");
    (target || el).focus({ preventScroll: true });
  }

  /** Close the open drawer (if any); focus returns to what opened it. */
  close() {
    if (!this.drawer) return;
    this.drawer = null;
    this._apply();
    const back = this.returnFocus;
    this.returnFocus = null;
    if (back && back.isConnected && typeof back.focus === "function") back.focus({ preventScroll: true });
  }

  /** Close the drawer because the user picked something in it (not on docked panels). */
  picked(panel) {
    if (this.drawer === panel) {
      this.returnFocus = null;
      this.close();
    }
  }

  _apply() {
    const { app, parts } = this;
    app.dataset.layout = this.mode;
    app.dataset.sidebar = this.visible("sidebar") ? "open" : "closed";
    app.dataset.tree = this.visible("tree") ? "open" : "closed";
    app.dataset.drawer = this.drawer || "";
    for (const panel of ["sidebar", "tree"]) {
      const el = parts[panel];
      const shown = this.visible(panel);
      // Hidden panels (closed drawers, a hidden docked tree) leave the focus order.
      el.inert = !shown;
      el.setAttribute("aria-hidden", String(!shown));
      if (this.docked(panel)) el.removeAttribute("role");
      else {
        el.setAttribute("role", "dialog");
        el.setAttribute("aria-modal", String(shown));
      }
    }
    // An open drawer is modal: the chat (and the other panel) cannot be reached behind it.
    parts.main.inert = Boolean(this.drawer);
    parts.scrim.hidden = !this.drawer;
    for (const btn of document.querySelectorAll("[data-toggles]")) {
      const panel = btn.dataset.toggles;
      btn.setAttribute("aria-expanded", String(this.visible(panel)));
      btn.dataset.docked = String(this.docked(panel));
    }
    this.dispatchEvent(new Event("change"));
  }
}
