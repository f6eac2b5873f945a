// Feature modules of the page. Each exports `install(app)` and gets the page's
// API (see the end of app.js): app.rpc and app.state, app.current() (the open
// session's SessionData), app.slot(name) for the slots in index.html
// ("header-tools", "composer-before", "composer-tools", "sidebar-bottom"),
// app.onNotification(fn), app.onComposerKey(fn), app.actions (send, abort,
// fork, rewind, retry, open, switchModel: wrap one to add a step), app.render(),
// app.toast(message, kind, action) and app.composer ({input, autosize}).
// Tool cards take views from toolviews.js (registerToolView).
//
// To add a feature: write `myfeature.js` exporting install(app), import it
// here and add it to FEATURES.

import * as files from "./files.js";
import * as browser from "./browser.js";

const FEATURES = [files, browser];

export function installFeatures(app) {
  for (const feature of FEATURES) {
    try {
      feature.install(app);
    } catch (err) {
      console.error("tron: a feature failed to install", err);
    }
  }
}
