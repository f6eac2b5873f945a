// A small, safe Markdown renderer: it builds DOM nodes from text (never HTML
// strings), so model output cannot inject markup. Supported: fenced code
// blocks (highlighted, with a copy button), tables (GitHub's syntax),
// headings, lists, block quotes, paragraphs, `code`, **bold**, *italic* and
// http(s) links. Anything else stays as literal text.

import { h } from "./dom.js";
import { highlight, languageOf } from "./highlight.js";

const TABLE_DELIMITER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

/** Render Markdown `text` into a DocumentFragment. */
export function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  let para = [];

  const flushPara = () => {
    if (para.length) frag.append(h("p", {}, inline(para.join("\n"))));
    para = [];
  };

  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+.#-]*)\s*$/);
    if (fence) {
      flushPara();
      const close = fence[1];
      const body = [];
      i++;
      // The closing fence: the same character, at least as long, nothing after it.
      const closing = new RegExp(`^\\s*${close[0] === "`" ? "`" : "~"}{${close.length},}\\s*$`);
      while (i < lines.length && !closing.test(lines[i])) body.push(lines[i++]);
      i++; // the closing fence (or the end of an unfinished, streaming block)
      frag.append(codeBlock(body.join("\n"), fence[2]));
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_DELIMITER.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const head = cells(line);
      const align = cells(lines[i + 1]).map((c) => (/^:-+:$/.test(c) ? "center" : /^-+:$/.test(c) ? "right" : /^:-+$/.test(c) ? "left" : ""));
      if (head.length === align.length && (head.length > 1 || /^\s*\|/.test(line))) {
        flushPara();
        i += 2;
        const rows = [];
        while (i < lines.length && lines[i].includes("|") && lines[i].trim() !== "") rows.push(cells(lines[i++]));
        frag.append(table(head, align, rows));
        continue;
      }
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      flushPara();
      const level = Math.min(heading[1].length + 2, 6); // h3..h6: headings inside a chat stay small
      frag.append(h(`h${level}`, {}, inline(heading[2])));
      i++;
      continue;
    }
    if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      flushPara();
      const ordered = /^\s*\d+[.)]\s+/.test(line);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
        const item = lines[i].replace(/^\s*([-*+]|\d+[.)])\s+/, "");
        list.append(h("li", {}, inline(item)));
        i++;
        // indented continuation lines belong to the item
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !/^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
          list.lastElementChild.append("\n", ...inline(lines[i].trim()));
          i++;
        }
      }
      frag.append(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      flushPara();
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      frag.append(h("blockquote", {}, renderMarkdown(quoted.join("\n"))));
      continue;
    }
    if (line.trim() === "") {
      flushPara();
      i++;
      continue;
    }
    para.push(line);
    i++;
  }
  flushPara();
  return frag;
}

/** The cells of a table row: split on unescaped pipes, the outer pipes dropped. */
function cells(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function table(head, align, rows) {
  const cell = (tag, text, i) => h(tag, { class: align[i] ? `align-${align[i]}` : null }, inline(text));
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, head.map((c, i) => cell("th", c, i)))),
      rows.length ? h("tbody", {}, rows.map((r) => h("tr", {}, head.map((_, i) => cell("td", r[i] ?? "", i))))) : null,
    ),
  );
}

/** A fenced code block: highlighted when the language is known, with a copy button. */
export function codeBlock(text, lang) {
  const code = h("code", {}, languageOf(lang) ? highlight(text, lang) : text);
  if (lang) code.dataset.lang = lang;
  const copy = h("button", { type: "button", class: "copy-btn", testid: "copy-code", "aria-label": "Copy the code", title: "Copy" });
  copy.addEventListener("click", () => copyText(text, copy));
  // The language and the button's label are drawn by CSS (attr(), ::before) so that
  // selecting and copying the message copies the code only.
  return h(
    "div",
    { class: "codeblock" },
    h("div", { class: "codeblock-head" }, h("span", { class: "code-lang", dataset: { lang: lang || "" } }), copy),
    h("pre", { class: "code" }, code),
  );
}

async function copyText(text, button) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    // No clipboard API (an insecure context): copy through a selected textarea.
    const area = h("textarea", { class: "sr-only", "aria-hidden": "true" });
    area.value = text;
    document.body.append(area);
    area.select();
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    area.remove();
  }
  button.dataset.copied = ok ? "true" : "failed";
  setTimeout(() => delete button.dataset.copied, 1500);
}

const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|(?<![\w*])\*(?!\s)([^*\n]+?)\*(?![\w*])|\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g;

/** Inline Markdown as an array of nodes/strings. */
export function inline(text) {
  const out = [];
  let last = 0;
  let m;
  // A fresh regex per call: inline() recurses (bold inside a link…), and a
  // shared global regex would have its lastIndex reset under the outer loop.
  const re = new RegExp(INLINE.source, "g");
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1]) out.push(h("code", {}, m[2]));
    else if (m[3] !== undefined) out.push(h("strong", {}, inline(m[3])));
    else if (m[4] !== undefined) out.push(h("em", {}, inline(m[4])));
    else if (m[5] !== undefined) {
      // Only http(s) URLs become links (the regex refuses javascript: and data:).
      out.push(h("a", { href: m[6], target: "_blank", rel: "noopener noreferrer" }, m[5]));
    }
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}
