// Toasts: short messages in the corner. Errors are announced assertively
// (role=alert); an optional action button (e.g. "Retry") stays until clicked.

import { h } from "./dom.js";

const box = () => document.getElementById("toasts");

/**
 * Show `message`. `kind`: "info" | "error". `action`: {label, run} adds a button
 * and keeps the toast up longer.
 */
export function toast(message, kind = "info", action = null) {
  const el = h("div", { class: `toast ${kind}`, testid: "toast", role: kind === "error" ? "alert" : "status" }, h("span", {}, message));
  if (action) {
    el.append(
      h("button", { type: "button", class: "link", onclick: () => { el.remove(); action.run(); } }, action.label),
    );
  }
  box().append(el);
  const ms = action ? 10_000 : 5000;
  setTimeout(() => el.classList.add("leaving"), ms);
  setTimeout(() => el.remove(), ms + 400);
  return el;
}
