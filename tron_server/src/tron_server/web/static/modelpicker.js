// The header's model picker: the catalog's models grouped by provider, the
// session's current model selected. Providers without an API key (model.list's
// `providers`) are labelled so and their models cannot be picked: switching to
// one would only fail at the next message.

import { h, setChildren } from "./dom.js";

/** "openai — no API key" for a provider that is not configured. */
export function providerLabel(id, status) {
  return status && !status.configured ? `${id} — no API key` : id;
}

/**
 * Fill `select` for `session` ({provider, model}) from `models` and `providers`.
 * Rebuilt only when something it shows changed.
 */
export function renderModelPicker(select, session, models, providers) {
  const key = `${session.provider}::${session.model}`;
  const status = new Map((providers || []).map((p) => [p.id, p]));
  const sig = `${key}|${models.length}|${[...status.values()].map((p) => `${p.id}:${p.configured}`).join(",")}`;
  if (select.dataset.sig === sig) return;
  select.dataset.sig = sig;
  const byProvider = new Map();
  for (const m of models) {
    if (!byProvider.has(m.provider)) byProvider.set(m.provider, []);
    byProvider.get(m.provider).push(m);
  }
  if (!models.some((m) => m.id === session.model && m.provider === session.provider)) {
    if (!byProvider.has(session.provider)) byProvider.set(session.provider, []);
    byProvider.get(session.provider).unshift({ id: session.model, provider: session.provider, name: session.model });
  }
  const groups = [];
  for (const [provider, list] of byProvider) {
    const st = status.get(provider);
    const usable = !st || st.configured;
    groups.push(
      h(
        "optgroup",
        { label: providerLabel(provider, st), dataset: { provider, configured: String(!st || st.configured) } },
        list.map((m) =>
          h(
            "option",
            {
              value: `${m.provider}::${m.id}`,
              disabled: !usable && !(m.id === session.model && m.provider === session.provider),
              title: st && !st.configured ? st.hint : null,
            },
            m.name && m.name !== m.id ? m.name : m.id,
          ),
        ),
      ),
    );
  }
  setChildren(select, groups);
  select.value = key;
  const cur = status.get(session.provider);
  select.title = cur && !cur.configured ? `${session.provider} has no API key: ${cur.hint}` : "The model for the next turns";
  select.dataset.configured = String(!cur || cur.configured);
}
