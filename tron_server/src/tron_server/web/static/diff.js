// Line diffs: compute one (Myers' O(ND) algorithm) between two texts, parse a
// unified diff, and render either as the same DOM (a table-like list of lines
// with old/new line numbers, + and - marks, and folded unchanged stretches).
//
//   renderDiff(diffLines(before, after), {path})   – e.g. an Edit's old/new strings
//   renderDiff(parseUnifiedDiff(text), {path})     – a diff the server computed

import { h } from "./dom.js";

/** Beyond this many differing lines the diff is "replace everything" (bounded work). */
const MAX_EDIT_DISTANCE = 500;

function splitLines(text) {
  const s = String(text ?? "");
  if (s === "") return [];
  const lines = s.split("\n");
  if (lines[lines.length - 1] === "") lines.pop(); // a final newline ends the last line
  return lines;
}

/**
 * The line operations turning `a` into `b`: [{op: " " | "-" | "+", text, oldNo, newNo}]
 * (1-based line numbers; `oldNo` null for an added line, `newNo` for a removed one).
 * `startOld`/`startNew` number the lines from elsewhere than 1.
 */
export function diffLines(a, b, { startOld = 1, startNew = 1 } = {}) {
  const A = splitLines(a);
  const B = splitLines(b);
  const ops = myers(A, B) ?? [...A.map((t) => ["-", t]), ...B.map((t) => ["+", t])];
  const out = [];
  let o = startOld;
  let n = startNew;
  for (const [op, text] of ops) {
    if (op === " ") out.push({ op, text, oldNo: o++, newNo: n++ });
    else if (op === "-") out.push({ op, text, oldNo: o++, newNo: null });
    else out.push({ op, text, oldNo: null, newNo: n++ });
  }
  return out;
}

/** Myers' shortest edit script as [op, text] pairs, or null past MAX_EDIT_DISTANCE. */
function myers(A, B) {
  // Common prefix and suffix first: edits are usually small and local.
  let pre = 0;
  while (pre < A.length && pre < B.length && A[pre] === B[pre]) pre++;
  let suf = 0;
  while (suf < A.length - pre && suf < B.length - pre && A[A.length - 1 - suf] === B[B.length - 1 - suf]) suf++;
  const a = A.slice(pre, A.length - suf);
  const b = B.slice(pre, B.length - suf);
  const N = a.length;
  const M = b.length;
  const max = Math.min(N + M, MAX_EDIT_DISTANCE);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace = [];
  let found = N === 0 && M === 0;
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < N && y < M && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= N && y >= M) {
        found = true;
        break;
      }
    }
  }
  if (!found) return null;
  // Walk the trace back from (N, M).
  const middle = [];
  let x = N;
  let y = M;
  for (let d = trace.length - 1; d >= 0 && (x > 0 || y > 0); d--) {
    const vd = trace[d];
    const k = x - y;
    const prevK = k === -d || (k !== d && vd[offset + k - 1] < vd[offset + k + 1]) ? k + 1 : k - 1;
    const prevX = vd[offset + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) middle.push([" ", a[--x], y--]);
    if (d > 0) {
      if (x === prevX) middle.push(["+", b[--y]]);
      else middle.push(["-", a[--x]]);
    }
  }
  middle.reverse();
  return [
    ...A.slice(0, pre).map((t) => [" ", t]),
    ...middle.map(([op, t]) => [op, t]),
    ...A.slice(A.length - suf).map((t) => [" ", t]),
  ];
}

/** Counts of added and removed lines. */
export function diffStats(lines) {
  let added = 0;
  let removed = 0;
  for (const l of lines) {
    if (l.op === "+") added++;
    else if (l.op === "-") removed++;
  }
  return { added, removed };
}

/**
 * Parse a unified diff (one file, or the first file of several) into the lines
 * `diffLines` returns, with hunk headers kept as {op: "@", text}.
 */
export function parseUnifiedDiff(text) {
  const out = [];
  let o = 0;
  let n = 0;
  for (const line of String(text ?? "").split("\n")) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/.exec(line);
    if (hunk) {
      o = Number(hunk[1]);
      n = Number(hunk[2]);
      out.push({ op: "@", text: line, oldNo: null, newNo: null });
    } else if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ") || line.startsWith("index ")) {
      continue;
    } else if (line.startsWith("+")) out.push({ op: "+", text: line.slice(1), oldNo: null, newNo: n++ });
    else if (line.startsWith("-")) out.push({ op: "-", text: line.slice(1), oldNo: o++, newNo: null });
    else if (line.startsWith(" ")) out.push({ op: " ", text: line.slice(1), oldNo: o++, newNo: n++ });
  }
  return out;
}

/**
 * Render diff lines. Unchanged stretches longer than 2 × `context` lines are
 * folded behind a button. `path` (optional) heads the block with +/- counts.
 */
export function renderDiff(lines, { path = null, context = 3, note = null } = {}) {
  const { added, removed } = diffStats(lines);
  const rows = [];
  let i = 0;
  while (i < lines.length) {
    if (lines[i].op !== " ") {
      rows.push(row(lines[i++]));
      continue;
    }
    let j = i;
    while (j < lines.length && lines[j].op === " ") j++;
    const run = lines.slice(i, j);
    const head = i === 0 ? 0 : context;
    const tail = j === lines.length ? 0 : context;
    if (run.length > head + tail + 1) {
      for (const l of run.slice(0, head)) rows.push(row(l));
      const hidden = run.slice(head, run.length - tail);
      const fold = h(
        "button",
        { type: "button", class: "diff-fold", testid: "diff-fold", title: "Show the unchanged lines" },
        `⋯ ${hidden.length} unchanged line${hidden.length === 1 ? "" : "s"}`,
      );
      fold.addEventListener("click", () => fold.replaceWith(...hidden.map(row)));
      rows.push(fold);
      for (const l of run.slice(run.length - tail)) rows.push(row(l));
    } else for (const l of run) rows.push(row(l));
    i = j;
  }
  return h(
    "div",
    { class: "diff", testid: "diff", dataset: { added: String(added), removed: String(removed) } },
    path || note
      ? h(
          "div",
          { class: "diff-head" },
          path ? h("span", { class: "diff-path mono", testid: "diff-path" }, path) : null,
          note ? h("span", { class: "muted" }, note) : null,
          h("span", { class: "spacer" }),
          h("span", { class: "diff-added" }, `+${added}`),
          h("span", { class: "diff-removed" }, `−${removed}`),
        )
      : null,
    h("div", { class: "diff-body", role: "group", "aria-label": path ? `Changes to ${path}` : "Changes" }, rows),
  );
}

function row(l) {
  if (l.op === "@") return h("div", { class: "diff-line hunk" }, h("span", { class: "diff-text" }, l.text));
  const kind = l.op === "+" ? "add" : l.op === "-" ? "del" : "ctx";
  return h(
    "div",
    { class: `diff-line ${kind}`, testid: `diff-${kind}` },
    h("span", { class: "diff-no", "aria-hidden": "true" }, l.oldNo ?? ""),
    h("span", { class: "diff-no", "aria-hidden": "true" }, l.newNo ?? ""),
    h("span", { class: "diff-mark" }, l.op === " " ? " " : l.op === "-" ? "−" : "+"),
    h("span", { class: "diff-text" }, l.text || " "),
  );
}
