// The session's tree: messages (and the session's start or fork point) with
// their branch points and the head. Events that are not messages are folded
// into the nearest message above them. Branches off the current path (left by
// a rewind) are shown dimmed; they can be forked but not rewound to.

import { h, icon as svgIcon, setChildren, shortId } from "./dom.js";
import { MESSAGE_TYPES, contentText } from "./model.js";
import { argsSummary } from "./toolviews.js";

const NODE_TYPES = new Set([...MESSAGE_TYPES, "session.start", "session.fork"]);

export class TreeView {
  /** @param {{onSelect, onFork, onRewind}} actions */
  constructor(container, actions) {
    this.container = container;
    this.actions = actions;
    this.renderedVersion = -1;
    this.sd = null;
  }

  render(sd) {
    if (this.sd === sd && this.renderedVersion === sd.version) return;
    this.sd = sd;
    this.renderedVersion = sd.version;
    const events = [...sd.events.values()];
    const shown = new Map(events.filter((e) => NODE_TYPES.has(e.type)).map((e) => [e.id, e]));
    const shownParent = (ev) => {
      let id = ev.parentId;
      while (id) {
        if (shown.has(id)) return id;
        const p = sd.events.get(id);
        if (!p) return null;
        id = p.parentId;
      }
      return null;
    };
    const children = new Map();
    const roots = [];
    for (const ev of shown.values()) {
      const parent = shownParent(ev);
      if (parent) {
        if (!children.has(parent)) children.set(parent, []);
        children.get(parent).push(ev);
      } else roots.push(ev);
    }
    const order = (a, b) => a.depth - b.depth || (a.sessionId === b.sessionId ? a.sequence - b.sequence : a.sessionId === sd.id ? 1 : -1);
    for (const list of children.values()) list.sort(order);
    roots.sort(order);

    const onPath = sd.pathIds();
    // The head as a node: the nearest shown ancestor-or-self of the head event.
    let headNode = sd.headId;
    while (headNode && !shown.has(headNode)) headNode = sd.events.get(headNode)?.parentId ?? null;

    const renderChain = (ev, into) => {
      let cur = ev;
      for (;;) {
        into.append(this._row(cur, onPath.has(cur.id), cur.id === headNode, (children.get(cur.id) || []).length));
        const kids = children.get(cur.id) || [];
        if (kids.length === 1) {
          cur = kids[0];
          continue;
        }
        for (const kid of kids) {
          const branch = h("div", { class: `tree-branch ${onPath.has(kid.id) ? "on-path" : ""}`, testid: "tree-branch" });
          renderChain(kid, branch);
          into.append(branch);
        }
        return;
      }
    };
    const root = h("div", { class: "tree-root" });
    for (const r of roots) renderChain(r, root);
    setChildren(this.container, root);
  }

  _row(ev, onPath, isHead, childCount) {
    const p = ev.payload || {};
    let icon;
    let label;
    if (ev.type === "message.user") {
      icon = "›";
      label = contentText(p.content);
    } else if (ev.type === "message.assistant") {
      icon = "◆";
      const text = contentText(p.content);
      const ctx = { cwd: this.sd?.session.workingDirectory };
      const tools = (Array.isArray(p.content) ? p.content : [])
        .filter((b) => b && b.type === "tool_use")
        .map((b) => `${b.name} ${argsSummary(b.name, b.input, ctx)}`.trim());
      label = text || (tools.length ? `[${tools.join(", ")}]` : "(no text)");
    } else if (ev.type === "session.fork") {
      icon = svgIcon("fork");
      label = `fork of …${shortId(p.sourceSessionId)}`;
    } else {
      icon = "●";
      label = `start · ${p.model || ""}`;
    }
    // Labels are plain text: drop the Markdown markers (fences, emphasis, code, heading and quote marks).
    label = label.replace(/```[\w-]*|[*`]+/g, "").replace(/^\s*[#>]+\s*/gm, "").replace(/\s+/g, " ").trim();
    if (label.length > 70) label = `${label.slice(0, 69)}…`;
    const isMessage = MESSAGE_TYPES.has(ev.type);
    return h(
      "div",
      {
        class: `tree-node ${ev.type.replace(".", "-")} ${onPath ? "on-path" : "off-path"} ${isHead ? "head" : ""}`,
        testid: "tree-node",
        dataset: { eventId: ev.id, onPath: String(onPath), head: String(isHead), branches: String(childCount) },
        title: onPath ? "On the current path: click to scroll to it" : "On another branch (left by a rewind): fork from it to continue there",
      },
      h("button", { class: "tree-label", type: "button", onclick: () => this.actions.onSelect(ev.id) }, h("span", { class: "tree-icon" }, icon), h("span", { class: "tree-text" }, label)),
      childCount > 1 ? h("span", { class: "badge", title: `${childCount} branches` }, svgIcon("fork"), String(childCount)) : null,
      isHead ? h("span", { class: "badge head-badge", testid: "tree-head" }, "HEAD") : null,
      isMessage
        ? h(
            "span",
            { class: "tree-actions" },
            h("button", { class: "icon", type: "button", title: "Fork from here", testid: "tree-fork", onclick: () => this.actions.onFork(ev.id) }, svgIcon("fork")),
            onPath && (!isHead || ev.type === "message.user")
              ? h("button", { class: "icon", type: "button", title: ev.type === "message.user" ? "Rewind to before this message (it goes back into the composer to edit)" : "Rewind to here", testid: "tree-rewind", onclick: () => this.actions.onRewind(ev.id) }, svgIcon("rewind"))
              : null,
          )
        : null,
    );
  }
}
