// One cassette: what it is, a timeline of its calls, each call as a conversation with its raw
// form one click away, and a player that replays a stream at its recorded pace.

function metaNode(c) {
  const rows = [];
  const row = (name, ...value) => rows.push(el("dt", null, name), el("dd", null, ...value));
  row("file", el("code", null, c.path || c.name));
  row("format", c.format === "llmvcr" ? `llmvcr, ${c.layout} layout` : `${c.format} (read in place)`);
  if (c.seed !== null && c.seed !== undefined) row("seed", el("code", null, c.seed));
  const made = Object.entries(c.recorded_with || {}).filter(([k]) => k !== "at").map(([k, v]) => `${k} ${S(v)}`);
  if (made.length) row("recorded with", made.join(" · "));
  const age = c.age;
  if (age.at) row("recorded", `${age.at}, ${age.age} ago`);
  else row("recorded", badge("undated", "warn"), " the file names no recording date (recorded_with.at)");
  if (age.expired === true) row("expiry", badge("expired", "bad"), ` older than max_age ${age.max_age}`);
  else if (age.expired === false) row("expiry", badge("fresh", "good"), ` within max_age ${age.max_age}`);
  else row("expiry", age.at ? "no max_age given (llmvcr view --max-age 30d checks one)" : "–");
  const played = c.played;
  if (!played) row("last run", "no test run recorded what it played");
  else if (played.this_run) {
    row("this run", badge("diverged", "bad"), played.unplayed.length
      ? ` a request no entry answered; the nearest, ${played.unplayed.map((i) => `#${i}`).join(", ")}, was not played (above)`
      : " a request no entry answered (above)");
  } else if (!played.fits) row("last run", badge("out of date", "warn"), ` the record of ${played.finished} is of an older version of this file`);
  else if (played.unplayed.length) {
    row("last run", badge(`${played.unplayed.length} unplayed`, "warn"),
      ` of ${plural(c.totals.calls, "entry", "entries")} in the run of ${played.finished}: `,
      played.unplayed.map((i) => `#${i}`).join(", "), " (llmvcr prune drops them)");
  } else row("last run", badge("all played", "good"), ` in the run of ${played.finished}`);
  if (played && played.failed_tests.length) row("failed tests", played.failed_tests.join(", "));
  row("models", c.models.length ? c.models.join(", ") : "–", " · ", c.providers.join(", "));
  const t = c.totals;
  row("totals", el("span", { class: "total-calls" }, plural(t.calls, "call")), " · ",
    el("span", { class: "total-tokens", data: { in: t.in, out: t.out } }, tokens(t.in, t.out)), " · ",
    el("span", { class: "total-usd" }, usd(t.usd)), t.unpriced ? ` (${t.unpriced} unpriced)` : "",
    t.ms ? ` · ${ms(t.ms)} of recorded streams` : "");
  return el("dl", { class: "meta" }, rows);
}

// The calls end to end on one canvas: a bar per call as long as its stream lasted, a tick per event.
function timelineNode(c, onPick) {
  const known = c.calls.map((call) => call.ms).filter((v) => v);
  const median = known.length ? known.sort((a, b) => a - b)[Math.floor(known.length / 2)] : 0;
  const canvas = el("canvas", { class: "timeline", height: 34 });
  const tip = el("div", { class: "tip" });
  const box = el("div", { class: "timeline-box" }, canvas, tip);
  const spans = [];
  function draw() {
    const width = Math.max(box.clientWidth - 2, 200);
    const total = c.calls.reduce((s, call) => s + (call.ms || median || 1), 0);
    const minimum = 3;
    const scale = Math.max((width - minimum * c.calls.length) / Math.max(total, 1), 0);
    let x = 0;
    spans.length = 0;
    for (const call of c.calls) {
      const w = minimum + (call.ms || median || 1) * scale;
      spans.push([x, w, call]);
      x += w;
    }
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.ceil(x * ratio);
    canvas.height = 34 * ratio;
    canvas.style.width = `${Math.ceil(x)}px`;
    const g = canvas.getContext("2d");
    g.scale(ratio, ratio);
    for (const [x0, w, call] of spans) {
      g.fillStyle = call.status >= 400 || call.error ? "#c0392b" : call.unplayed ? "#b9770e" : call.mcp ? "#8e44ad" : call.ms ? "#2e86c1" : "#95a5a6";
      g.fillRect(x0 + 0.5, 4, Math.max(w - 1, 1), 22);
      if (call.ms && call.events > 1) {
        const events = c.raw[call.i].response.stream;
        g.fillStyle = "rgba(255,255,255,0.55)";
        for (const event of events) {
          if (typeof event.t === "number") g.fillRect(x0 + 0.5 + (event.t / call.ms) * (w - 1), 8, 1, 14);
        }
      }
    }
  }
  function at(offsetX) {
    return spans.find(([x0, w]) => offsetX >= x0 && offsetX < x0 + w);
  }
  canvas.addEventListener("mousemove", (e) => {
    const hit = at(e.offsetX);
    if (!hit) { tip.textContent = ""; return; }
    const call = hit[2];
    const what = call.mcp ? `MCP ${S(call.mcp.method)} ${S(call.mcp.tool) || ""}` : S(call.model) || S(call.path);
    tip.textContent = `#${call.i} ${what} · ${call.status} · ${call.ms ? ms(call.ms) + `, ${plural(call.events, "event")}` : "duration not recorded"}`;
  });
  canvas.addEventListener("click", (e) => { const hit = at(e.offsetX); if (hit) onPick(hit[2]); });
  requestAnimationFrame(draw);
  return el("div", { class: "timeline-wrap" }, el("h2", null, "Timeline"),
    el("p", { class: "hint" }, known.length
      ? "One bar per call (purple: a tool server's MCP call), as long as its stream took to arrive (calls without a stream recorded no duration and get a fixed width); white ticks are stream events at their arrival offsets."
      : "One bar per call (purple: a tool server's MCP call), in the order they were made: no call here recorded how long it took (only a stream's arrival offsets are kept)."),
    box);
}

// -- raw: the linear layout's references resolved, as the request was sent -----------------------
function isReference(value) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return false;
  const keys = Object.keys(value).sort().join(",");
  return keys === "same_as" || keys === "append,extends";
}

function fullBody(c, i) {
  c.bodies = c.bodies || new Map();
  if (c.bodies.has(i)) return c.bodies.get(i);
  const body = (c.raw[i].request || {}).body;
  let out = body;
  if (body && typeof body === "object" && !Array.isArray(body)) {
    out = {};
    for (const [name, value] of Object.entries(body)) {
      if (!isReference(value)) out[name] = value;
      else if ("same_as" in value) out[name] = fullBody(c, value.same_as)[name];
      else out[name] = fullBody(c, value.extends)[name].concat(value.append);
    }
  }
  c.bodies.set(i, out);
  return out;
}

// An MCP answer the linear layout holds once: {same_as: N} in its response.body.result.
function fullResponse(c, i) {
  const response = c.raw[i].response || {};
  const body = response.body;
  if (!body || typeof body !== "object" || !isReference(body.result) || !("same_as" in body.result)) return response;
  const result = fullResponse(c, body.result.same_as).body.result;
  return Object.assign({}, response, { body: Object.assign({}, body, { result }) });
}

function rawNode(c, i) {
  const raw = c.raw[i];
  const request = Object.assign({}, raw.request, { body: fullBody(c, i) });
  const head = Object.assign({}, raw);
  delete head.request;
  delete head.response;
  return [
    el("h4", null, "request"), el("pre", { class: "raw raw-request" }, pretty(R(Object.assign(head, { request })))),
    el("h4", null, "response"), el("pre", { class: "raw raw-response" }, pretty(R(fullResponse(c, i)))),
  ];
}

// -- the stream player -----------------------------------------------------------------------------
function deltaOf(data) {
  if (!data || typeof data !== "object") return "";
  const d = data.delta;
  if (d && typeof d === "object") return S(d.text) || S(d.thinking) || S(d.partial_json) || "";
  if (typeof d === "string") return S(d);
  let text = "";
  for (const choice of data.choices || []) {
    const delta = choice.delta || {};
    if (typeof delta.content === "string") text += S(delta.content);
    for (const tool of delta.tool_calls || []) text += S((tool.function || {}).arguments) || "";
  }
  for (const candidate of data.candidates || []) {
    for (const part of (candidate.content || {}).parts || []) if (typeof part.text === "string") text += S(part.text);
  }
  return text;
}

function playerNode(c, call) {
  const events = c.raw[call.i].response.stream || [];
  const frames = events.map((e) => [typeof e.t === "number" ? e.t : 0, deltaOf(e.data)]);
  const total = frames.length ? frames[frames.length - 1][0] : 0;
  const out = document.createTextNode("");
  const counter = el("span", { class: "counter" }, `0 / ${plural(frames.length, "event")}`);
  const cursor = el("div", { class: "cursor" });
  const track = el("canvas", { class: "track", height: 16 });
  let speed = 1;
  let timer = null;
  const speeds = [["1×", 1], ["4×", 4], ["instant", Infinity]].map(([label, value]) => {
    const b = el("button", { class: `speed${value === 1 ? " on" : ""}`, type: "button", data: { speed: label } }, label);
    b.addEventListener("click", () => { speed = value; speeds.forEach((s) => s.classList.toggle("on", s === b)); });
    return b;
  });
  function show(index, elapsed) {
    counter.textContent = `${index} / ${plural(frames.length, "event")} · ${ms(Math.min(elapsed, total))}`;
    counter.dataset.played = String(index);
    cursor.style.left = `${total ? Math.min(elapsed / total, 1) * 100 : 100}%`;
  }
  function play() {
    clearTimeout(timer);
    out.data = "";
    if (speed === Infinity || !total) {
      out.data = frames.map((f) => f[1]).join("");
      show(frames.length, total);
      return;
    }
    const start = performance.now();
    let index = 0;
    (function tick() {
      const elapsed = (performance.now() - start) * speed;
      let chunk = "";
      while (index < frames.length && frames[index][0] <= elapsed) chunk += frames[index++][1];
      if (chunk) out.appendData(chunk);
      show(index, elapsed);
      if (index < frames.length) timer = setTimeout(tick, 16);
    })();
  }
  const button = el("button", { class: "play", type: "button" }, "▶ play");
  button.addEventListener("click", play);
  const drawn = () => {
    const width = track.clientWidth || 300;
    const ratio = window.devicePixelRatio || 1;
    track.width = width * ratio;
    track.height = 16 * ratio;
    const g = track.getContext("2d");
    g.scale(ratio, ratio);
    g.fillStyle = "#2e86c1";
    for (const [t] of frames) g.fillRect(total ? (t / total) * (width - 1) : 0, 2, 1, 12);
  };
  new IntersectionObserver((seen, observer) => {
    if (seen.some((s) => s.isIntersecting)) { observer.disconnect(); drawn(); }
  }).observe(track);
  const timed = events.some((e) => typeof e.t === "number");
  return el("div", { class: "player" },
    el("div", { class: "controls" }, button, speeds, counter,
      timed ? "" : el("span", { class: "hint" }, " (no arrival offsets recorded: all events at 0 ms)")),
    el("div", { class: "track-box" }, track, cursor),
    el("pre", { class: "played" }, out));
}

// An MCP call: the server, the tool and its arguments, its answer, and the model turn that asked.
function mcpNode(call, links) {
  const m = call.mcp;
  const box = el("div", { class: "conversation mcp" });
  if (call.asked_by !== undefined) {
    add(box, el("div", { class: "asked-by" },
      el("a", { href: `#${links.prefix}-call-${call.asked_by}` }, `asked for by model turn #${call.asked_by}`)));
  }
  add(box, el("div", { class: "mcp-server" }, "server ", el("code", null, S(m.server))));
  if (m.tool !== undefined) {
    add(box, el("div", { class: "block tool-use" }, el("span", { class: "tool-name" }, `calls ${S(m.tool)}`), " ",
      el("code", null, JSON.stringify(R(m.arguments)))));
    add(box, el("div", { class: "block tool-result mcp-result" }, el("div", { class: "text" }, S(m.result))));
  } else if (call.preview) box.appendChild(el("div", { class: "preview" }, el("code", null, call.preview)));
  return box;
}

// The MCP calls that answered a model turn's tool calls, listed beside it.
function servedNode(call, links, calls) {
  return el("div", { class: "served-by" }, "its tools, called over MCP: ", call.served_by.map((i, k) => [
    k ? ", " : "", el("a", { href: `#${links.prefix}-call-${i}` }, `#${i} ${S(calls[i].mcp.tool)}`),
  ]));
}

function callNode(c, call, links) {
  const flags = [call.unplayed ? "unplayed" : "", call.status >= 400 || call.error ? "failed" : "", call.stream ? "streamed" : ""];
  const head = el("h3", null, el("a", { class: "num", href: `#${links.prefix}-call-${call.i}` }, `#${call.i}`), " ",
    el("span", { class: "provider" }, S(call.provider)), " ", el("code", null, `${S(call.method)} ${S(call.path)}`),
    call.asked_by !== undefined ? badge(`asked by #${call.asked_by}`, "info") : null,
    " · ", el("span", { class: "model" }, S(call.model) || "–"), " · ", el("span", { class: "status" }, String(call.status)),
    call.stream ? badge(`stream · ${plural(call.events, "event")} · ${ms(call.ms)}`, "info") : null,
    call.unplayed ? badge("unplayed in the last run", "warn") : null,
    call.truncated ? badge("truncated", "warn") : null,
    call.failure ? badge(`failed mid-stream: ${S(call.failure)}`, "bad") : null);
  const facts = el("div", { class: "facts" },
    el("span", { class: "tokens", data: { in: call.in, out: call.out } }, tokens(call.in, call.out)), " · ",
    el("span", { class: "usd" }, usd(call.usd)));
  const section = el("section", { class: `call ${flags.join(" ")}`, id: `${links.prefix}-call-${call.i}`, data: { i: call.i } },
    head, facts, call.mcp ? mcpNode(call, links) : conversationNode(call, links, c.calls));
  if (call.served_by) section.appendChild(servedNode(call, links, c.calls));
  if (call.stream && call.events) section.appendChild(playerNode(c, call));
  section.appendChild(folded("raw request and response", () => rawNode(c, call.i), { class: "raw-box" }));
  return section;
}

function cassetteNode(c, k, ready) {
  const links = new ToolLinks(`c${k}`);
  const list = el("div", { class: "calls" });
  const pick = (call) => {
    const target = document.getElementById(`${links.prefix}-call-${call.i}`);
    if (target) target.scrollIntoView({ block: "start" });
  };
  const box = el("div", { class: "cassette", data: { k } },
    el("h2", { class: "cassette-name" }, c.name), metaNode(c), timelineNode(c, pick),
    el("h2", null, `Calls (${c.calls.length.toLocaleString("en")})`), list);
  inSlices(c.calls, 30, 200, (call) => list.appendChild(callNode(c, call, links)), ready);
  return box;
}
