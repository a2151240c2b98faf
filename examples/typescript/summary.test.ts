// One test, one cassette: recorded the first time (against the real API, or the upstream you pass to
// `llmvcr serve --upstream`), replayed from cassettes/ after that, with no network and no key.
//
//   llmvcr serve --port 8765 &               (CI: add --record-mode none, or set CI=1)
//   LLMVCR_PROXY_URL=http://127.0.0.1:8765 node --import tsx --test summary.test.ts
import { test } from "node:test";
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

import { cassette } from "./llmvcr.ts";

test("summarises the report", async (t) => {
  const tape = await cassette(t.name);
  try {
    const claude = new Anthropic({ baseURL: tape.baseURL });
    const message = await claude.messages.create({
      model: "claude-sonnet-4-5",
      max_tokens: 200,
      messages: [{ role: "user", content: "Summarise: revenue up 4%, churn down, onboarding shipped." }],
    });
    assert.equal(message.content[0].type, "text");

    const gpt = new OpenAI({ baseURL: `${tape.baseURL}/v1` });
    const chunks = await gpt.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "One word for that quarter?" }],
      stream: true,
    });
    let text = "";
    for await (const chunk of chunks) text += chunk.choices[0]?.delta?.content ?? "";
    assert.ok(text.length > 0);
  } finally {
    await tape.close();
  }
});
