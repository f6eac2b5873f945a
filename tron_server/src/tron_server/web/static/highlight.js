// A small syntax highlighter for code blocks (no remote assets, no HTML
// strings): a language is a list of token rules tried at each position; the
// matches become <span class="tok-…"> around text nodes, everything else stays
// plain text. It colours what helps reading (comments, strings, numbers,
// keywords, function names, types), not a full grammar.

import { h } from "./dom.js";

const words = (list) => new RegExp(`\\b(?:${list.trim().split(/\s+/).join("|")})\\b`);

const NUM = /\b(?:0[xX][\da-fA-F_]+|0[bB][01_]+|\d[\d_]*(?:\.[\d_]+)?(?:[eE][+-]?\d+)?)[a-zA-Z]*\b/;
const DQ = /"(?:\\[\s\S]|[^"\\\n])*"?/;
const SQ = /'(?:\\[\s\S]|[^'\\\n])*'?/;
const BT = /`(?:\\[\s\S]|[^`\\])*`?/;
const SLASH_COMMENT = /\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)/;
const HASH_COMMENT = /#[^\n]*/;
const FN = /\b[A-Za-z_$][\w$]*(?=\s*\()/;
const TYPE = /\b[A-Z][A-Za-z0-9_]*\b/;

/** Rules per language: [token class, regex] in priority order. */
const C_LIKE = (keywords, literals = "true false null") => [
  ["com", SLASH_COMMENT],
  ["str", DQ],
  ["str", SQ],
  ["num", NUM],
  ["kw", words(keywords)],
  ["lit", words(literals)],
  ["fn", FN],
  ["type", TYPE],
];

const JS_KW = "async await break case catch class const continue debugger default delete do else export extends finally for from function get if import in instanceof let new of return set static super switch this throw try typeof var void while with yield as type interface enum implements private public protected readonly declare namespace keyof satisfies";
const LANGS = {
  js: [["com", SLASH_COMMENT], ["str", DQ], ["str", SQ], ["str", BT], ["num", NUM], ["kw", words(JS_KW)], ["lit", words("true false null undefined NaN Infinity")], ["fn", FN], ["type", TYPE]],
  python: [
    ["com", HASH_COMMENT],
    ["str", /[rbfuRBFU]{0,2}(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$))/],
    ["str", /[rbfuRBFU]{0,2}(?:"(?:\\[\s\S]|[^"\\\n])*"?|'(?:\\[\s\S]|[^'\\\n])*'?)/],
    ["num", NUM],
    ["kw", words("and as assert async await break class continue def del elif else except finally for from global if import in is lambda match case nonlocal not or pass raise return try while with yield")],
    ["lit", words("True False None self cls")],
    ["deco", /@[\w.]+/],
    ["fn", /\b[A-Za-z_]\w*(?=\s*\()/],
    ["type", TYPE],
  ],
  bash: [
    ["com", /(?:^|(?<=\s))#[^\n]*/],
    ["str", /"(?:\\[\s\S]|[^"\\])*"?/],
    ["str", /'[^']*'?/],
    ["var", /\$(?:\{[^}\n]*\}?|[A-Za-z_]\w*|[0-9@#?$!*-])/],
    ["kw", words("if then else elif fi for while until do done case esac in function select return exit export local readonly declare set unset source alias")],
    ["fn", /(?<=^[ \t]*|[|;&][ \t]*|\$\()[A-Za-z_][\w.-]*/m],
    ["op", /&&|\|\||[|;&]|>>?|<</],
    ["num", /\b\d+\b/],
  ],
  json: [["key", /"(?:\\.|[^"\\\n])*"(?=\s*:)/], ["str", DQ], ["num", /-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b/], ["lit", words("true false null")]],
  go: C_LIKE("break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var", "true false nil iota"),
  rust: [["com", SLASH_COMMENT], ["str", DQ], ["str", /'(?:\\.|[^'\\])'/], ["num", NUM], ["kw", words("as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while")], ["lit", words("true false None Some Ok Err")], ["mac", /\b[a-z_]\w*!/], ["fn", FN], ["type", TYPE]],
  c: C_LIKE("auto break case char const continue default do double else enum extern float for goto if inline int long register return short signed sizeof static struct switch typedef union unsigned void volatile while class namespace template typename public private protected virtual override new delete using try catch throw this final abstract extends implements import package interface var val fun when object data suspend override internal lateinit func let guard struct protocol extension init deinit self", "true false null nullptr NULL nil"),
  css: [["com", /\/\*[\s\S]*?(?:\*\/|$)/], ["str", DQ], ["str", SQ], ["kw", /@[\w-]+/], ["key", /[\w-]+(?=\s*:)/], ["num", /-?\b\d+(?:\.\d+)?(?:px|em|rem|%|vh|vw|s|ms|fr|deg)?\b/], ["lit", /#[\da-fA-F]{3,8}\b/], ["type", /[.#][\w-]+/]],
  html: [["com", /<!--[\s\S]*?(?:-->|$)/], ["tag", /<\/?[\w-]+|\/?>/], ["key", /\b[\w-]+(?==)/], ["str", DQ], ["str", SQ]],
  yaml: [["com", HASH_COMMENT], ["key", /^[ \t-]*[\w.-]+(?=\s*:)/m], ["str", DQ], ["str", SQ], ["num", NUM], ["lit", words("true false null yes no on off")]],
  toml: [["com", HASH_COMMENT], ["type", /^\s*\[\[?[^\]\n]*\]\]?/m], ["key", /^[ \t]*[\w.-]+(?=\s*=)/m], ["str", /"""[\s\S]*?(?:"""|$)/], ["str", DQ], ["str", SQ], ["num", NUM], ["lit", words("true false")]],
  sql: [["com", /--[^\n]*|\/\*[\s\S]*?(?:\*\/|$)/], ["str", SQ], ["str", DQ], ["num", NUM], ["kw", /\b(?:select|from|where|and|or|not|insert|into|values|update|set|delete|create|table|index|drop|alter|add|join|left|right|inner|outer|on|as|group|by|order|having|limit|offset|union|all|distinct|case|when|then|else|end|null|is|in|like|primary|key|foreign|references|default|returning|with|recursive|begin|commit|rollback|exists|unique|constraint)\b/i], ["fn", FN]],
  ruby: [["com", HASH_COMMENT], ["str", DQ], ["str", SQ], ["sym", /:[A-Za-z_]\w*/], ["num", NUM], ["kw", words("alias and begin break case class def defined do else elsif end ensure for if in module next not or redo rescue retry return self super then undef unless until when while yield require attr_reader attr_accessor")], ["lit", words("true false nil")], ["type", TYPE]],
  diff: [["add", /^\+[^\n]*/m], ["del", /^-[^\n]*/m], ["hunk", /^@@[^\n]*/m], ["com", /^(?:diff|index|---|\+\+\+)[^\n]*/m]],
};

const ALIASES = {
  javascript: "js", jsx: "js", mjs: "js", cjs: "js", ts: "js", typescript: "js", tsx: "js", node: "js",
  py: "python", python3: "python", py3: "python",
  sh: "bash", shell: "bash", zsh: "bash", console: "bash", shellsession: "bash",
  jsonc: "json", json5: "json",
  golang: "go", rs: "rust",
  "c++": "c", cpp: "c", cc: "c", h: "c", hpp: "c", cs: "c", csharp: "c", java: "c", kotlin: "c", kt: "c", swift: "c", scala: "c", dart: "c", php: "c",
  scss: "css", less: "css",
  xml: "html", svg: "html", vue: "html",
  yml: "yaml", ini: "toml", cfg: "toml",
  rb: "ruby", patch: "diff", udiff: "diff",
  postgres: "sql", postgresql: "sql", sqlite: "sql", mysql: "sql",
};

/** Highlighting stops past this many characters (a huge block stays plain and fast). */
const MAX_CHARS = 30_000;

/** The canonical name of a language tag, or null when unknown. */
export function languageOf(tag) {
  const name = String(tag || "").toLowerCase();
  if (LANGS[name]) return name;
  return ALIASES[name] || null;
}

const compiled = new Map();
function compile(lang) {
  let c = compiled.get(lang);
  if (!c) {
    const rules = LANGS[lang];
    const source = rules.map(([, re]) => `(${re.source})`).join("|");
    const flags = new Set(["g", "m", ...rules.flatMap(([, re]) => [...re.flags].filter((f) => f === "i"))]);
    c = { rules, re: new RegExp(source, [...flags].join("")), groups: groupIndexes(rules) };
    compiled.set(lang, c);
  }
  return c;
}

/** The index of each rule's outer group in the combined regex (rules may have groups of their own). */
function groupIndexes(rules) {
  const out = [];
  let index = 1;
  for (const [, re] of rules) {
    out.push(index);
    index += 1 + new RegExp(`${re.source}|`).exec("").length - 1;
  }
  return out;
}

/**
 * Tokens of `code` as [class | null, text] pairs (null: plain), for `lang`
 * (any tag; unknown languages give one plain token).
 */
export function tokenize(code, lang) {
  const name = languageOf(lang);
  const text = String(code ?? "");
  if (!name || text.length > MAX_CHARS) return [[null, text]];
  const { rules, re, groups } = compile(name);
  const out = [];
  let last = 0;
  re.lastIndex = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m[0] === "") {
      re.lastIndex++;
      continue;
    }
    const rule = groups.findIndex((g) => m[g] !== undefined);
    if (m.index > last) out.push([null, text.slice(last, m.index)]);
    out.push([rules[rule][0], m[0]]);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push([null, text.slice(last)]);
  return out;
}

/** `code` as highlighted nodes (text nodes and spans) for `lang`. */
export function highlight(code, lang) {
  return tokenize(code, lang).map(([cls, text]) => (cls ? h("span", { class: `tok-${cls}` }, text) : text));
}
