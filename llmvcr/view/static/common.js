"use strict";
// Shared pieces. Every piece of recorded data reaches the page through textContent or a DOM
// property, never as markup: a response holding a script tag is shown as text.

const DOC = JSON.parse(document.getElementById("llmvcr-data").textContent);
const STRINGS = DOC.strings;

// A string of the data: long repeated strings are stored once, in DOC.strings.
function S(value) {
  if (typeof value !== "string" || value.length === 0) return value;
  const first = value.charCodeAt(0);
  if (first === 1) return STRINGS[Number(value.slice(1))];
  if (first === 2) return value.slice(1);
  return value;
}

// A value of the data with every string in it resolved (for the raw view and the stream player).
function R(value) {
  if (typeof value === "string") return S(value);
  if (Array.isArray(value)) return value.map(R);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const key of Object.keys(value)) out[key] = R(value[key]);
    return out;
  }
  return value;
}

// An element with attributes set as properties and children appended as text or nodes.
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  if (props) {
    for (const [key, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "data") for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
      else if (key === "on") for (const [k, v] of Object.entries(value)) node.addEventListener(k, v);
      else node[key] = value;
    }
  }
  for (const child of children) add(node, child);
  return node;
}

function add(node, child) {
  if (child === undefined || child === null || child === false) return;
  if (Array.isArray(child)) child.forEach((c) => add(node, c));
  else if (child instanceof Node) node.appendChild(child);
  else node.appendChild(document.createTextNode(String(S(child))));
}

function plural(n, word, many) {
  return `${n.toLocaleString("en")} ${n === 1 ? word : many || word + "s"}`;
}

function tokens(input, output) {
  return `${input.toLocaleString("en")} in · ${output.toLocaleString("en")} out`;
}

function usd(value) {
  if (value === null || value === undefined) return "–";
  if (value === 0) return "$0";
  return value < 0.01 ? `$${value.toFixed(5)}` : `$${value.toFixed(4)}`;
}

function ms(value) {
  if (value === null || value === undefined) return "–";
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${Math.round(value)} ms`;
}

function pretty(value) {
  return JSON.stringify(value, null, 2);
}

// A folded block: <details> whose body is built the first time it opens.
function folded(summary, build, props) {
  const body = el("div", { class: "folded-body" });
  const box = el("details", props || {}, el("summary", null, summary), body);
  let built = false;
  box.addEventListener("toggle", () => {
    if (box.open && !built) {
      built = true;
      add(body, build());
    }
  });
  return box;
}

function badge(text, kind) {
  return el("span", { class: `badge ${kind || ""}` }, text);
}

// Work in slices so the first screen paints at once and a long list keeps coming.
function inSlices(items, first, size, each, done) {
  let at = 0;
  function step() {
    const end = Math.min(items.length, at + (at ? size : first));
    for (; at < end; at++) each(items[at], at);
    if (at < items.length) setTimeout(step, 0);
    else if (done) done();
  }
  step();
}
