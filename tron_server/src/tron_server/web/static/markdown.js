// A small, safe Markdown renderer: it builds DOM nodes from text (never HTML
// strings), so model output cannot inject markup. Supported: fenced code
// blocks, headings, lists, block quotes, paragraphs, `code`, **bold**,
// *italic* and http(s) links. Anything else stays as literal text.

import { h } from "./dom.js";

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
      const code = h("code", {}, body.join("\n"));
      if (fence[2]) code.dataset.lang = fence[2];
      frag.append(h("pre", { class: "code" }, code));
      continue;
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
