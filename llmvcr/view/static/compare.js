// Two requests side by side: every changed path highlighted on both sides, the words inside a
// changed text marked, unchanged parts folded.

const MISSING = "<missing>";

function segmentsOf(path) {
  return path.match(/\.[^.[]+|\[\d+\]|^[^.[]+/g) || [path];
}

function comparison(cmp) {
  const changed = new Set(cmp.rows.map((r) => S(r[0])));
  const around = new Set();
  for (const path of changed) {
    let prefix = "";
    for (const part of segmentsOf(path)) {
      prefix += part;
      around.add(prefix);
    }
  }
  return { changed, around, words: cmp.words || {} };
}

function wordsNode(segments, side) {
  const keep = side === "left" ? "-" : "+";
  const node = el("span", { class: "leaf string words" }, '"');
  for (const [op, text] of segments) {
    if (op === "=") add(node, text);
    else if (op === keep) node.appendChild(el(side === "left" ? "del" : "ins", null, text));
  }
  add(node, '"');
  return node;
}

function leafNode(value) {
  if (typeof value === "string") return el("span", { class: "leaf string" }, `"${value}"`);
  return el("span", { class: "leaf" }, JSON.stringify(value));
}

function preview(value) {
  const text = JSON.stringify(R(value));
  return text.length > 90 ? `${text.slice(0, 90)}…` : text;
}

function treeNode(value, path, side, ctx) {
  const wrap = el("span", { class: "node", data: { path } });
  if (ctx.changed.has(path)) wrap.classList.add("changed");
  value = typeof value === "string" ? S(value) : value;
  const words = ctx.words[path];
  if (words && typeof value === "string") {
    wrap.appendChild(wordsNode(words, side));
    return wrap;
  }
  if (value === null || typeof value !== "object") {
    wrap.appendChild(leafNode(value));
    return wrap;
  }
  const isArray = Array.isArray(value);
  const keys = isArray ? value.map((_, i) => i) : Object.keys(value);
  const list = el("div", { class: "children" });
  let quiet = [];
  const flush = () => {
    if (quiet.length > 1) {
      const items = quiet;
      list.appendChild(folded(`… ${plural(items.length, "unchanged item")}`, () => items.map(([k, p]) => itemNode(k, p)), { class: "unchanged" }));
    } else quiet.forEach(([k, p]) => list.appendChild(itemNode(k, p)));
    quiet = [];
  };
  const itemNode = (key, childPath) => el("div", { class: "item" },
    isArray ? null : el("span", { class: "key" }, `${JSON.stringify(key)}: `), treeNode(value[key], childPath, side, ctx));
  for (const key of keys) {
    const childPath = isArray ? `${path}[${key}]` : `${path}.${key}`;
    if (ctx.around.has(childPath) || keys.length <= 3) {
      flush();
      list.appendChild(itemNode(key, childPath));
    } else quiet.push([key, childPath]);
  }
  flush();
  add(wrap, [isArray ? "[" : "{", list, isArray ? "]" : "}"]);
  if (ctx.around.has(path)) wrap.classList.add("around");
  return wrap;
}

function shown(value) {
  value = S(value);
  if (value === MISSING) return el("em", null, "(absent)");
  const text = typeof value === "string" ? value : JSON.stringify(R(value));
  return el("code", null, text.length > 160 ? `${text.slice(0, 160)}…` : text);
}

function compareNode(cmp) {
  const ctx = comparison(cmp);
  const sides = el("div", { class: "sides" },
    el("div", { class: "side left" }, el("h4", null, cmp.left_label),
      cmp.left === null ? el("p", { class: "hint" }, "nothing recorded on this endpoint") : el("div", { class: "tree" }, treeNode(cmp.left, cmp.root, "left", ctx))),
    el("div", { class: "side right" }, el("h4", null, cmp.right_label),
      cmp.right === null ? el("p", { class: "hint" }, "(absent)") : el("div", { class: "tree" }, treeNode(cmp.right, cmp.root, "right", ctx))));
  const jump = (path) => {
    for (const node of sides.querySelectorAll(".node.changed")) {
      if (node.dataset.path !== path) continue;
      for (let up = node.parentElement; up; up = up.parentElement) if (up.tagName === "DETAILS") up.open = true;
      node.classList.remove("flash");
      void node.offsetWidth;
      node.classList.add("flash");
      node.scrollIntoView({ block: "center" });
    }
  };
  const table = el("table", { class: "paths" },
    el("thead", null, el("tr", null, el("th", null, "path"), el("th", null, cmp.left_short || "left"), el("th", null, cmp.right_short || "right"))),
    el("tbody", null, cmp.rows.map(([path, left, right]) => el("tr", { class: "path-row" },
      el("td", null, el("a", { href: "#", class: "path", on: { click: (e) => { e.preventDefault(); jump(S(path)); } } }, S(path))),
      el("td", null, shown(left)), el("td", null, shown(right))))));
  return el("div", { class: "compare" }, cmp.rows.length ? table : el("p", { class: "hint" }, "no differing path"), sides);
}

function divergenceNode(d) {
  return el("section", { class: "divergence" },
    el("h2", null, d.test ? `${d.test}` : "A replay that diverged"),
    el("dl", { class: "meta" },
      el("dt", null, "cassette"), el("dd", null, el("code", null, d.cassette)),
      el("dt", null, "nearest entry"), el("dd", null, d.entry === null ? "none on this endpoint" : `#${d.entry}`),
      el("dt", null, "changed paths"), el("dd", { class: "changed-count" }, String(d.compare.rows.length))),
    el("details", { class: "error-message" }, el("summary", null, "the error message"), el("pre", null, d.message)),
    compareNode(d.compare));
}

function diffNode(data) {
  const box = el("div", { class: "diff" },
    el("dl", { class: "meta" },
      el("dt", null, "A"), el("dd", null, el("code", null, data.a), ` (${plural(data.a_count, "entry", "entries")})`),
      el("dt", null, "B"), el("dd", null, el("code", null, data.b), ` (${plural(data.b_count, "entry", "entries")})`),
      el("dt", null, "differing entries"), el("dd", { class: "changed-count" }, String(data.pairs.filter((p) => !p.same).length))));
  for (const pair of data.pairs) {
    if (pair.same) {
      box.appendChild(el("div", { class: "pair same" }, `[${pair.i}] same`));
      continue;
    }
    box.appendChild(el("section", { class: "pair" },
      el("h3", null, pair.only ? `[${pair.i}] only in ${pair.only}` : `[${pair.i}] differs at ${plural(pair.compare.rows.length, "path")}`),
      compareNode(pair.compare)));
  }
  return box;
}
