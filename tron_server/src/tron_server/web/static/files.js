// The files the agent changed, in the web chat (a feature: see features.js).
//
// - Write and Edit cards show the diff the server recorded (session.diff from the
//   file event's parent to it: the file's real content before, with its own line
//   numbers), in place of the one the page computes from the call's arguments, as
//   soon as it has it. Bash cards list the files the command changed (file.changes),
//   each with its diff one click away.
// - Rewinding asks first when files would go back (session.previewRewind): a dialog
//   offers "conversation only" or "conversation and files", lists the files with
//   their diffs, and says which ones were changed outside the agent since (a
//   conflict: the rewind with files refuses them unless "restore them anyway" is
//   ticked). Nothing changes until Rewind is pressed; then a toast offers Undo (a
//   rewind with files back to the old head). When no file would change, the rewind
//   happens as before, without a dialog.

import { h, setChildren } from "./dom.js";
import { parseUnifiedDiff, renderDiff } from "./diff.js";
import { registerToolView, relPath, toolView } from "./toolviews.js";

const RECORDING_TYPES = { Write: "file.write", Edit: "file.edit", Bash: "file.changes" };
const STATUS = { added: "added", deleted: "deleted", modified: "modified", mode: "mode", type: "type" };
const NOTES = {
  binary: "binary file",
  not_stored: "too large to have been recorded",
  too_large: "too large to show",
  missing: "content missing from the store",
};
const PROBLEMS = {
  changed: "changed outside the agent since",
  not_stored: "cannot be restored: too large to have been recorded",
  refused: "the guardrails refuse writing it",
};

/** The recorded file event of a tool call (null until it arrives). */
function fileEvent(sd, toolCallId, type) {
  if (!sd) return null;
  for (const ev of sd.events.values()) {
    if (ev.type === type && ev.payload && ev.payload.toolCallId === toolCallId) return ev;
  }
  return null;
}

/** One file's diff block (or a line saying why there is none). */
export function fileDiff(file, cwd, note = null) {
  const path = relPath(file.path, cwd);
  if (!file.diff) {
    return h(
      "div",
      { class: "file-nodiff muted small", testid: "file-nodiff" },
      `${path}: ${STATUS[file.status] || file.status} (${NOTES[file.note] || "no text to show"})`,
    );
  }
  return renderDiff(parseUnifiedDiff(file.diff), { path, note });
}

export function install(app) {
  document.head.append(h("link", { rel: "stylesheet", href: "files.css" }));
  const cache = new Map(); // event id -> Promise of session.diff's files

  function diffOf(sd, ev) {
    if (!cache.has(ev.id)) {
      const call = app.rpc
        .call("session.diff", { sessionId: sd.id, fromEventId: ev.parentId, toEventId: ev.id })
        .then((r) => r.files || [])
        .catch(() => {
          cache.delete(ev.id); // try again on the next render
          return null;
        });
      cache.set(ev.id, call);
    }
    return cache.get(ev.id);
  }

  /** Fill `holder` once the call's file event and its diff are there. */
  function whenRecorded(holder, ctx, type, fill, tries = 0) {
    const ev = fileEvent(ctx.sd, ctx.id, type);
    if (!ev) {
      // The event and the card's result travel separately: look again shortly.
      if (tries < 20 && ctx.sd) setTimeout(() => holder.isConnected && whenRecorded(holder, ctx, type, fill, tries + 1), 300);
      return;
    }
    diffOf(ctx.sd, ev).then((files) => {
      if (files && holder.isConnected) fill(files, ev);
    });
  }

  for (const name of ["Write", "Edit"]) {
    const base = toolView(name);
    registerToolView(name, {
      summary: base && base.summary,
      body: (args, ctx) => {
        const holder = h("div", { class: "recorded-diff", testid: "recorded-diff-holder" }, base && base.body ? base.body(args, ctx) : null);
        whenRecorded(holder, ctx, RECORDING_TYPES[name], (files) => {
          if (!files.length) return;
          holder.dataset.recorded = "true";
          setChildren(holder, files.map((f) => fileDiff(f, ctx.cwd, "as recorded")));
        });
        return holder;
      },
    });
  }

  const bash = toolView("Bash");
  registerToolView("Bash", {
    summary: bash && bash.summary,
    body: (args, ctx) => {
      const holder = h("div", { class: "bash-files" });
      whenRecorded(holder, ctx, "file.changes", (files) => {
        if (!files.length) return;
        const list = h(
          "details",
          { class: "changed-files", testid: "bash-changed-files" },
          h("summary", {}, `${files.length} file${files.length === 1 ? "" : "s"} changed`),
          files.map((f) => fileDiff(f, ctx.cwd)),
        );
        setChildren(holder, list);
      });
      return h("div", {}, bash && bash.body ? bash.body(args, ctx) : null, holder);
    },
  });

  const rewindPlain = app.actions.rewind;
  app.actions.rewind = async (eventId, opts = {}) => {
    const sd = app.current();
    if (!sd || sd.busy || opts.restoreFiles !== undefined) return rewindPlain(eventId, opts);
    let preview;
    try {
      preview = await app.rpc.call("session.previewRewind", { sessionId: sd.id, eventId });
    } catch (err) {
      if (err && err.code === -32601) return rewindPlain(eventId); // an older server
      app.toast(`Rewind failed: ${err.message}`, "error");
      return false;
    }
    if (!preview.files || !preview.files.length) return rewindPlain(eventId);
    const choice = await rewindDialog(preview, sd.session.workingDirectory);
    if (!choice) return false;
    if (!choice.restoreFiles) return rewindPlain(eventId);
    const before = sd.session.headEventId;
    const done = await rewindPlain(eventId, { restoreFiles: true, force: choice.force });
    if (done) {
      // The old head is a branch of this session now: going back there with files undoes it.
      app.toast(`Rewound the conversation and ${preview.files.length} file${preview.files.length === 1 ? "" : "s"}.`, "info", {
        label: "Undo",
        run: () => app.actions.rewind(before, { restoreFiles: true }),
      });
    }
    return done;
  };
}

/**
 * The rewind dialog: resolves to {restoreFiles, force}, or null when cancelled.
 */
export function rewindDialog(preview, cwd) {
  const files = preview.files;
  const conflicts = files.filter((f) => f.problem === "changed");
  const blocked = files.filter((f) => f.problem && f.problem !== "changed");
  return new Promise((resolve) => {
    const onlyConversation = h("input", { type: "radio", name: "rewind-mode", value: "conversation", testid: "rewind-conversation-only" });
    const withFiles = h("input", { type: "radio", name: "rewind-mode", value: "files", checked: true, testid: "rewind-with-files" });
    const force = h("input", { type: "checkbox", testid: "rewind-force" });
    const rows = files.map((f) =>
      h(
        "li",
        { class: "rewind-file", testid: "rewind-file", dataset: { problem: f.problem || "" } },
        h(
          "details",
          {},
          h(
            "summary",
            {},
            h("span", { class: `badge status-${f.status}` }, STATUS[f.status] || f.status),
            " ",
            h("span", { class: "mono" }, relPath(f.path, cwd)),
            f.diff ? h("span", { class: "muted small" }, ` +${f.added} −${f.removed}`) : null,
            f.problem ? h("span", { class: "file-problem", testid: "rewind-file-problem" }, ` ${PROBLEMS[f.problem] || f.problem}`) : null,
          ),
          fileDiff(f, cwd),
        ),
      ),
    );
    const dialog = h(
      "dialog",
      { class: "dialog rewind-dialog", testid: "rewind-dialog", "aria-labelledby": "rewind-dialog-title" },
      h(
        "form",
        { method: "dialog" },
        h("h2", { id: "rewind-dialog-title" }, "Rewind"),
        h(
          "fieldset",
          { class: "rewind-modes" },
          h("legend", { class: "sr-only" }, "What goes back"),
          h("label", { class: "choice" }, onlyConversation, h("span", {}, h("b", {}, "Conversation only"), h("span", { class: "muted" }, " — the files stay as they are"))),
          h("label", { class: "choice" }, withFiles, h("span", {}, h("b", {}, "Conversation and files"), h("span", { class: "muted" }, ` — ${files.length} file${files.length === 1 ? "" : "s"} the agent changed go${files.length === 1 ? "es" : ""} back`))),
        ),
        h("ul", { class: "rewind-files", testid: "rewind-files", "aria-label": "Files that would go back" }, rows),
        conflicts.length
          ? h(
              "label",
              { class: "choice force" },
              force,
              h("span", {}, `Restore ${conflicts.length === 1 ? "it" : "them"} anyway: ${conflicts.length} file${conflicts.length === 1 ? " was" : "s were"} changed outside the agent since (what ${conflicts.length === 1 ? "it holds is" : "they hold is"} kept in the record)`),
            )
          : null,
        blocked.length ? h("p", { class: "form-note muted" }, `${blocked.length} file${blocked.length === 1 ? "" : "s"} cannot be restored and will stay as they are if you go on.`) : null,
        h("p", { class: "form-error", testid: "rewind-error", role: "alert", hidden: true }),
        h(
          "menu",
          {},
          h("button", { type: "button", class: "ghost", testid: "rewind-cancel", onclick: () => dialog.close("cancel") }, "Cancel"),
          h("button", { type: "submit", class: "primary", testid: "rewind-confirm", value: "rewind" }, "Rewind"),
        ),
      ),
    );
    const error = dialog.querySelector('[data-testid="rewind-error"]');
    dialog.addEventListener("submit", (e) => {
      if (withFiles.checked && conflicts.length && !force.checked) {
        e.preventDefault();
        error.textContent = "Some files were changed outside the agent: tick “Restore anyway”, or rewind the conversation only.";
        error.hidden = false;
      }
    });
    dialog.addEventListener("close", () => {
      dialog.remove();
      if (dialog.returnValue !== "rewind") return resolve(null);
      resolve({ restoreFiles: withFiles.checked, force: withFiles.checked && force.checked });
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}
