// A call as a conversation: system, the messages it adds, tool calls linked to their results,
// images as thumbnails, thinking folded.

// Tool calls and results meet through their ids, within one cassette's page.
class ToolLinks {
  constructor(prefix) {
    this.prefix = prefix;
    this.uses = new Map(); // tool id -> {node, name, call}
    this.results = new Map(); // tool id -> node
    this.serial = 0;
  }
  anchor(kind, id) {
    return `${this.prefix}-${kind}-${String(id).replace(/[^A-Za-z0-9_-]/g, "_")}`;
  }
  use(id, name, call, node) {
    node.id = this.anchor("use", id);
    this.uses.set(id, { node, name, call });
    const result = this.results.get(id);
    if (result) this.join(id, node, result);
  }
  result(id, node) {
    node.id = this.anchor("result", id);
    this.results.set(id, node);
    const use = this.uses.get(id);
    if (use) this.join(id, use.node, node);
    return use;
  }
  join(id, useNode, resultNode) {
    const forward = useNode.querySelector(".to-result");
    if (forward) {
      forward.href = `#${this.anchor("result", id)}`;
      forward.textContent = "→ its result";
      forward.classList.remove("pending");
    }
    const back = resultNode.querySelector(".to-use");
    if (back) back.href = `#${this.anchor("use", id)}`;
  }
}

function imageBlock(block) {
  const media = S(block.media_type) || "";
  let src = null;
  if (block.data !== undefined && /^image\/[A-Za-z0-9.+-]+$/.test(media)) src = `data:${media};base64,${S(block.data)}`;
  const url = S(block.url);
  if (typeof url === "string" && /^data:image\/[A-Za-z0-9.+-]+;base64,/.test(url)) src = url;
  if (src === null) {
    return el("div", { class: "block image remote" }, "image at ", el("code", null, url || "(no source)"),
      " (not loaded: this page makes no request)");
  }
  const img = el("img", { class: "thumb", alt: "image sent with the request", src });
  img.addEventListener("click", () => img.classList.toggle("big"));
  return el("figure", { class: "block image" }, img);
}

function blockNode(block, role, links, call) {
  const kind = block.type;
  if (kind === "text") return el("div", { class: "block text" }, block.text);
  if (kind === "thinking") {
    const text = S(block.thinking) || "";
    return el("details", { class: "block thinking" },
      el("summary", null, `thinking · ${plural(text.length, "character")}`), el("div", { class: "text" }, text));
  }
  if (kind === "tool_use") {
    const node = el("div", { class: "block tool-use" },
      el("span", { class: "tool-name" }, `calls ${S(block.name)}`), " ",
      el("code", null, JSON.stringify(R(block.input))), " ",
      el("span", { class: "tool-id" }, `[${S(block.id)}]`), " ",
      el("a", { class: "to-result pending", textContent: "(no result in this cassette yet)" }));
    links.use(S(block.id), S(block.name), call, node);
    return node;
  }
  if (kind === "tool_result") {
    const id = S(block.tool_use_id);
    const node = el("div", { class: `block tool-result${block.is_error ? " error" : ""}` });
    const head = el("div", { class: "result-head" });
    node.appendChild(head);
    node.appendChild(el("div", { class: "text" }, block.content));
    const use = links.result(id, node);
    add(head, [el("a", { class: "to-use", href: use ? `#${links.anchor("use", id)}` : undefined },
      `← result of ${use ? use.name : "a tool call"} [${id}]`), use ? ` (call #${use.call})` : "",
      block.is_error ? badge("error", "bad") : null]);
    return node;
  }
  if (kind === "image") return imageBlock(block);
  return el("div", { class: "block other" }, el("code", null, JSON.stringify(R(block))));
}

function messageNode(message, links, call, extraClass) {
  const role = S(message.role);
  return el("div", { class: `message role-${role} ${extraClass || ""}` },
    el("div", { class: "role" }, role),
    el("div", { class: "blocks" }, (message.content || []).map((b) => blockNode(b, role, links, call))));
}

function systemNode(call) {
  const text = S(call.system) || "";
  const parts = [];
  if (text) {
    parts.push(text.length > 400
      ? el("details", { class: "system" }, el("summary", null, `system · ${plural(text.length, "character")}`),
        el("div", { class: "text" }, text))
      : el("div", { class: "system" }, el("span", { class: "role" }, "system"), el("div", { class: "text" }, text)));
  }
  if (call.tools && call.tools.length) {
    parts.push(el("div", { class: "tools" }, `tools: ${call.tools.map(S).join(", ")}`));
  }
  return parts;
}

// A tool the agent ran (an @llmvcr.tool entry): linked back to the tool_use that asked for it and
// on to the request that carried its result, when the arguments match what the model asked.
function toolRunNode(tool, links) {
  const head = el("div", { class: "result-head" },
    el("span", { class: "tool-name" }, `ran ${S(tool.name)}`), " ", el("code", null, JSON.stringify(R(tool.arguments))));
  if (tool.asked_by) {
    const id = S(tool.asked_by.id);
    add(head, [" ", el("a", { class: "to-use", href: `#${links.anchor("use", id)}` },
      `← asked for by call #${tool.asked_by.call} [${id}]`), " ",
      el("a", { class: "to-result", href: `#${links.anchor("result", id)}` }, "→ where its result was sent")]);
  }
  const node = el("div", { class: `block tool-run${tool.raised ? " error" : ""}` }, head);
  if (tool.raised) {
    node.appendChild(el("div", { class: "error-text" }, `raised ${S(tool.raised.type)}: ${S(tool.raised.message)}`));
  } else if (tool.yielded) {
    node.appendChild(el("div", { class: "text" }, `yielded ${plural(tool.yielded.length, "item")}: ${JSON.stringify(R(tool.yielded))}`));
  } else {
    node.appendChild(el("div", { class: "text" }, `returned ${JSON.stringify(R(tool.returned))}`));
  }
  return node;
}

// Everything the call adds to the conversation, then its answer.
function conversationNode(call, links, calls) {
  const box = el("div", { class: "conversation" });
  if (call.tool) {
    box.appendChild(toolRunNode(call.tool, links));
    return box;
  }
  if (call.parent !== null && call.parent !== undefined) {
    const parent = calls[call.parent];
    const whole = parent.history || 0;
    const note = call.kept < whole ? ` (its first ${plural(call.kept, "message")} only: the rest was changed)` : "";
    add(box, el("div", { class: "continues" },
      el("a", { href: `#${links.prefix}-call-${call.parent}` }, `continues call #${call.parent}`), note));
  }
  add(box, systemNode(call));
  for (const message of call.new || []) box.appendChild(messageNode(message, links, call.i, "sent"));
  if (call.images && call.images.length) {
    box.appendChild(el("div", { class: "message role-user sent" }, el("div", { class: "role" }, "images"),
      el("div", { class: "blocks" }, call.images.map(imageBlock))));
  }
  if (call.reply) {
    const reply = messageNode({ role: "assistant", content: call.reply.content }, links, call.i, "reply");
    reply.appendChild(el("div", { class: "stop" }, `${S(call.reply.stop)} · ${tokens(call.in, call.out)}`));
    box.appendChild(reply);
  }
  if (call.error) box.appendChild(el("div", { class: "error-text" }, "error: ", call.error));
  if (call.preview) box.appendChild(el("div", { class: "preview" }, el("code", null, call.preview)));
  if (call.notes && call.notes.length) {
    box.appendChild(el("ul", { class: "notes" }, call.notes.map((n) => el("li", null, n))));
  }
  return box;
}
