// How a tool call's arguments are shown on its card: the command for Bash, the
// path and a diff for Edit and Write, the pattern for Grep… never raw JSON
// (that stays one click away, under "Raw arguments").
//
// A view is {summary?(args, ctx) → string, body?(args, ctx) → Node | null}
// (ctx: {sd, id, cwd} — the session, the call's id, the working directory, to
// which paths are shown relative); other
// features can add or replace views with registerToolView(name, view) (e.g. a
// diff the server recorded, instead of the one computed here).

import { h } from "./dom.js";
import { highlight } from "./highlight.js";
import { diffLines, renderDiff } from "./diff.js";

const views = new Map();

/** Add (or replace) the view of tool `name`. */
export function registerToolView(name, view) {
  views.set(name, view);
}

export function toolView(name) {
  return views.get(name) || null;
}

/** `path` relative to the working directory `cwd` when it lies inside it. */
export function relPath(path, cwd) {
  const p = String(path ?? "");
  const base = String(cwd ?? "").replace(/\/+$/, "");
  return base && p.startsWith(`${base}/`) ? p.slice(base.length + 1) : p;
}

/** A one-line summary of a call (the command, the path, …) for the card's header. */
export function argsSummary(name, args, ctx = {}) {
  if (!args || typeof args !== "object") return "";
  const view = views.get(name);
  if (view && view.summary) {
    const s = view.summary(args, ctx);
    if (s) return s;
  }
  for (const key of ["command", "file_path", "path", "pattern", "query", "url", "skill", "description"]) {
    if (typeof args[key] === "string") return args[key];
  }
  const first = Object.values(args).find((v) => typeof v === "string");
  return first || "";
}

/**
 * The body showing `args` of a call to `name` (`ctx`: {sd, id} — the session
 * and the tool call id, for views that look at earlier calls).
 */
export function renderArgs(name, args, ctx = {}) {
  if (args === undefined) return null;
  const view = views.get(name);
  let body = null;
  if (view && view.body && args && typeof args === "object") {
    try {
      body = view.body(args, ctx);
    } catch (err) {
      console.warn("tron: tool view failed", name, err);
    }
  }
  return body || genericArgs(args);
}

/** Key/value rows: strings as text (multi-line ones as blocks), the rest as compact JSON. */
export function genericArgs(args) {
  if (!args || typeof args !== "object" || Array.isArray(args)) return h("pre", { class: "code" }, JSON.stringify(args, null, 2));
  const entries = Object.entries(args);
  if (!entries.length) return h("div", { class: "muted small" }, "(no arguments)");
  return h(
    "dl",
    { class: "kv" },
    entries.map(([k, v]) => [
      h("dt", {}, k),
      h("dd", {}, typeof v === "string" ? (v.includes("\n") ? h("pre", { class: "code" }, v) : h("span", { class: "mono" }, v)) : h("span", { class: "mono" }, JSON.stringify(v))),
    ]),
  );
}

const path = (p, ctx, extra = null) => h("div", { class: "tool-path" }, h("span", { class: "mono", testid: "tool-path", title: p }, relPath(p, ctx.cwd)), extra);
const note = (text) => h("span", { class: "muted small" }, text);

registerToolView("Bash", {
  summary: (a) => a.command,
  body: (a) =>
    h(
      "div",
      { class: "tool-view bash" },
      a.description ? h("div", { class: "muted small" }, a.description) : null,
      h("pre", { class: "code hl command", testid: "tool-command", dataset: { lang: "bash" } }, h("span", { class: "prompt", "aria-hidden": "true" }, "$ "), h("code", {}, highlight(a.command || "", "bash"))),
      a.timeout ? note(`timeout ${a.timeout} s`) : null,
    ),
});

registerToolView("Edit", {
  summary: (a, ctx) => relPath(a.file_path, ctx.cwd),
  body: (a, ctx) => {
    // Line numbers in the file when the result's numbered snippet says where the
    // new text landed (the first occurrence); else counted from the edit's start.
    const start = a.replace_all ? null : editStartLine(ctx.sd?.tools.get(ctx.id)?.result, a.new_string);
    return h(
      "div",
      { class: "tool-view edit" },
      renderDiff(diffLines(a.old_string ?? "", a.new_string ?? "", start ? { startOld: start, startNew: start } : {}), {
        path: relPath(a.file_path, ctx.cwd),
        note: a.replace_all ? "every occurrence" : null,
      }),
    );
  },
});

/** The file line where `newString` starts, from an Edit result's `cat -n` style snippet. */
export function editStartLine(result, newString) {
  const text = typeof result === "string" ? result : Array.isArray(result) ? result.map((p) => (p && p.text) || "").join("\n") : "";
  const want = String(newString ?? "").split("\n");
  if (!text || !want[0].trim()) return null;
  const numbered = [];
  for (const line of text.split("\n")) {
    const m = /^\s*(\d+)\t(.*)$/.exec(line);
    if (m) numbered.push([Number(m[1]), m[2]]);
  }
  for (let i = 0; i < numbered.length; i++) {
    if (want.every((w, j) => numbered[i + j] && numbered[i + j][1] === w && numbered[i + j][0] === numbered[i][0] + j)) return numbered[i][0];
  }
  return null;
}

registerToolView("MultiEdit", {
  summary: (a, ctx) => relPath(a.file_path, ctx.cwd),
  body: (a, ctx) =>
    h(
      "div",
      { class: "tool-view edit" },
      (Array.isArray(a.edits) ? a.edits : []).map((e, i) =>
        renderDiff(diffLines(e.old_string ?? "", e.new_string ?? ""), { path: i === 0 ? relPath(a.file_path, ctx.cwd) : null, note: e.replace_all ? "every occurrence" : null }),
      ),
    ),
});

registerToolView("Write", {
  summary: (a, ctx) => relPath(a.file_path, ctx.cwd),
  body: (a, ctx) => {
    // The diff against what this session wrote to the same file before, if it did;
    // otherwise every line is new (the file's earlier content is not known here).
    const before = previousWrite(ctx, a.file_path);
    return h(
      "div",
      { class: "tool-view write" },
      renderDiff(diffLines(before ?? "", a.content ?? ""), {
        path: relPath(a.file_path, ctx.cwd),
        note: before === null ? "written whole" : "against this session's previous write",
      }),
    );
  },
});

registerToolView("Read", {
  summary: (a, ctx) => relPath(a.file_path, ctx.cwd),
  body: (a, ctx) => {
    const from = a.offset ? Number(a.offset) : null;
    const range = from || a.limit ? `lines ${from ?? 1}–${a.limit ? (from ?? 1) + Number(a.limit) - 1 : "end"}` : null;
    return path(a.file_path, ctx, range ? note(range) : null);
  },
});

registerToolView("Grep", {
  summary: (a) => a.pattern,
  body: (a, ctx) => {
    const flags = [];
    if (a.glob) flags.push(`files ${a.glob}`);
    if (a.type) flags.push(`type ${a.type}`);
    if (a.case_insensitive) flags.push("ignore case");
    if (a.output_mode) flags.push(a.output_mode);
    for (const k of ["before", "after", "context", "head_limit"]) if (a[k] !== undefined && a[k] !== null) flags.push(`${k.replace("_", " ")} ${a[k]}`);
    return h("div", { class: "tool-view" }, h("div", {}, h("code", { testid: "tool-pattern" }, a.pattern), note(` in ${relPath(a.path, ctx.cwd) || "the working directory"}`)), flags.length ? note(flags.join(" · ")) : null);
  },
});

registerToolView("Glob", {
  summary: (a) => a.pattern,
  body: (a, ctx) => h("div", { class: "tool-view" }, h("code", { testid: "tool-pattern" }, a.pattern), note(` in ${relPath(a.path, ctx.cwd) || "the working directory"}`)),
});

registerToolView("TodoWrite", {
  summary: (a) => {
    const todos = Array.isArray(a.todos) ? a.todos : [];
    const done = todos.filter((t) => t && t.status === "completed").length;
    return `${done}/${todos.length} done`;
  },
  body: (a) =>
    h(
      "ul",
      { class: "todos" },
      (Array.isArray(a.todos) ? a.todos : []).map((t) =>
        h("li", { class: `todo ${t.status}`, dataset: { status: t.status } }, h("span", { class: "todo-mark", "aria-hidden": "true" }, t.status === "completed" ? "☑" : t.status === "in_progress" ? "◐" : "☐"), t.status === "in_progress" && t.activeForm ? t.activeForm : t.content),
      ),
    ),
});

registerToolView("Task", {
  summary: (a) => a.description,
  body: (a) =>
    h(
      "div",
      { class: "tool-view task" },
      a.subagent_type ? note(`agent: ${a.subagent_type}${a.model ? ` · model ${a.model}` : ""}`) : null,
      h("div", { class: "pre task-prompt" }, a.prompt || ""),
    ),
});

registerToolView("Skill", { summary: (a) => a.name });

function previousWrite(ctx, filePath) {
  const { sd, id } = ctx;
  if (!sd || !filePath) return null;
  let found = null;
  for (const [otherId, t] of sd.tools) {
    if (otherId === id) break;
    if (t.name === "Write" && t.arguments && t.arguments.file_path === filePath && typeof t.arguments.content === "string" && t.status === "done") {
      found = t.arguments.content;
    }
  }
  return found;
}
