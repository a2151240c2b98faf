// Several cassettes: a row per cassette, a filter, and each cassette's page one click away.

function staleWhy(c) {
  const why = [];
  if (c.totals.unplayed) why.push(`${c.totals.unplayed} unplayed`);
  if (c.age.expired) why.push(`expired (max_age ${c.age.max_age})`);
  return why.join(", ");
}

function indexNode(cassettes) {
  const filter = el("input", { type: "search", id: "filter", placeholder: "filter: name, model, provider, format", autocomplete: "off" });
  const staleOnly = el("input", { type: "checkbox", id: "stale-only" });
  const shown = el("span", { id: "shown" });
  const body = el("tbody");
  const rows = cassettes.map((c, k) => {
    if (c.error) {
      const tr = el("tr", { class: "unreadable", data: { k } },
        el("td", null, el("code", null, c.path)), el("td", { colSpan: 6, class: "error-text" }, c.error));
      tr.search = `${c.path}`.toLowerCase();
      tr.stale = false;
      return tr;
    }
    const t = c.totals;
    const name = el("a", { href: `#cassette-${k}`, class: "open" }, c.path || c.name);
    const tr = el("tr", { class: `row${c.stale ? " stale" : ""}`, data: { k } },
      el("td", null, name),
      el("td", null, c.format === "llmvcr" ? `llmvcr (${c.layout})` : c.format),
      el("td", { class: "n calls" }, t.calls.toLocaleString("en")),
      el("td", { class: "n", data: { in: t.in, out: t.out } }, tokens(t.in, t.out)),
      el("td", { class: "n" }, usd(t.usd)),
      el("td", null, c.age.age ? c.age.age : "undated"),
      el("td", null, c.stale ? badge(`stale: ${staleWhy(c)}`, "warn") : "no"));
    tr.search = [c.path, c.name, c.format, c.models.join(" "), c.providers.join(" ")].join(" ").toLowerCase();
    tr.stale = c.stale;
    return tr;
  });
  rows.forEach((tr) => body.appendChild(tr));
  function apply() {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    let n = 0;
    for (const tr of rows) {
      const keep = words.every((w) => tr.search.includes(w)) && (!staleOnly.checked || tr.stale);
      tr.hidden = !keep;
      if (keep) n++;
    }
    shown.textContent = `${n} of ${plural(rows.length, "cassette")} shown`;
    shown.dataset.shown = String(n);
  }
  filter.addEventListener("input", apply);
  staleOnly.addEventListener("change", apply);
  apply();
  const readable = cassettes.filter((c) => !c.error);
  const sum = (f) => readable.reduce((s, c) => s + f(c), 0);
  const priced = readable.filter((c) => c.totals.usd !== null);
  const foot = el("tr", { class: "totals" }, el("td", null, "all"), el("td"),
    el("td", { class: "n" }, sum((c) => c.totals.calls).toLocaleString("en")),
    el("td", { class: "n" }, tokens(sum((c) => c.totals.in), sum((c) => c.totals.out))),
    el("td", { class: "n" }, priced.length ? usd(priced.reduce((s, c) => s + c.totals.usd, 0)) : "–"),
    el("td"), el("td", null, `${readable.filter((c) => c.stale).length} stale`));
  const head = el("tr", null, ["cassette", "format", "calls", "tokens", "cost", "age", "stale"].map((h) => el("th", null, h)));
  return el("div", { class: "index" },
    el("div", { class: "filters" }, filter, el("label", null, staleOnly, " stale only"), shown),
    el("table", { class: "cassettes" }, el("thead", null, head), body, el("tfoot", null, foot)));
}
