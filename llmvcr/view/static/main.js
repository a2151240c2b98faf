// Which page this is, and drawing it. body[data-ready] is set once everything is drawn.

function ready() {
  document.body.dataset.ready = "1";
  performance.mark("llmvcr-drawn");
}

function cassettesPage(app, cassettes) {
  if (cassettes.length === 1) {
    app.appendChild(cassetteNode(cassettes[0], 0, ready));
    return;
  }
  const index = indexNode(cassettes);
  const pages = new Map();
  const back = el("p", { class: "back" }, el("a", { href: "#" }, "← all cassettes"));
  const holder = el("div", { class: "opened" });
  app.append(index, back, holder);
  function route() {
    const match = /^#cassette-(\d+)$/.exec(location.hash);
    const k = match ? Number(match[1]) : -1;
    const c = cassettes[k];
    index.hidden = Boolean(c);
    back.hidden = !c;
    for (const [key, page] of pages) page.hidden = key !== k;
    if (c && !c.error && !pages.has(k)) {
      document.body.dataset.ready = "";
      const page = cassetteNode(c, k, ready);
      pages.set(k, page);
      holder.appendChild(page);
    }
    if (c) window.scrollTo(0, 0);
  }
  window.addEventListener("hashchange", route);
  route();
  if (!/^#cassette-\d+$/.test(location.hash)) ready();
}

function main() {
  const app = document.getElementById("app");
  app.textContent = "";
  document.getElementById("title").textContent = DOC.title;
  document.getElementById("subtitle").textContent = `written by llmvcr ${DOC.llmvcr} on ${DOC.generated}`;
  document.body.dataset.kind = DOC.kind;
  const data = DOC.data;
  if (DOC.kind === "cassettes") cassettesPage(app, data.cassettes);
  else if (DOC.kind === "divergence") {
    data.divergences.forEach((d) => app.appendChild(divergenceNode(d)));
    if (data.cassettes && data.cassettes.length) {
      app.appendChild(el("h2", null, "The cassette"));
      app.appendChild(cassetteNode(data.cassettes[0], 0, ready));
    } else ready();
  } else if (DOC.kind === "diff") {
    app.appendChild(diffNode(data));
    ready();
  }
}

main();
