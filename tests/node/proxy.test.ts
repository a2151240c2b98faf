// The official Node SDKs through `llmvcr serve`: each call shape records against the loopback LLM
// server, then replays with that server stopped and the proxy replaying only; the answers must be
// equal. Run: npm test (node --import tsx --test). PYTHON names the interpreter (default python3).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import Anthropic from "@anthropic-ai/sdk";
import OpenAI, { AzureOpenAI } from "openai";
import { GoogleGenAI } from "@google/genai";
import { generateText, streamText } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";

import { cassette } from "../../examples/typescript/llmvcr.ts";

const HERE = dirname(fileURLToPath(import.meta.url));
const ANTHROPIC_KEY = "sk-ant-api03-SENTINEL-node-anthropic-0123456789";
const OPENAI_KEY = "sk-proj-SENTINEL-node-openai-0123456789abcdef";
const GEMINI_KEY = "AIzaSy-SENTINEL-node-gemini-0123456789abc";
const USER = [{ role: "user" as const, content: "hello from node" }];

type Shape = (base: string) => Promise<unknown>;

const anthropic = (base: string) => new Anthropic({ apiKey: ANTHROPIC_KEY, baseURL: base, maxRetries: 0 });
const openai = (base: string) => new OpenAI({ apiKey: OPENAI_KEY, baseURL: `${base}/v1`, maxRetries: 0 });
const gemini = (base: string) => new GoogleGenAI({ apiKey: GEMINI_KEY, httpOptions: { baseUrl: base } });

async function all<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

// the SDK's view of the HTTP exchange (a date, a server name) is not part of the answer
function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (key, v) => (key === "sdkHttpResponse" ? undefined : v)));
}

const SHAPES: Record<string, Shape> = {
  anthropic_create: (b) => anthropic(b).messages.create({ model: "claude-test", max_tokens: 64, messages: USER }),
  anthropic_stream: async (b) =>
    all(await anthropic(b).messages.create({ model: "claude-test", max_tokens: 64, messages: USER, stream: true })),
  anthropic_stream_helper: (b) =>
    anthropic(b).messages.stream({ model: "claude-test", max_tokens: 64, messages: USER }).finalMessage(),
  anthropic_count_tokens: (b) => anthropic(b).messages.countTokens({ model: "claude-test", messages: USER }),
  anthropic_beta: (b) =>
    anthropic(b).beta.messages.create({
      model: "claude-test",
      max_tokens: 64,
      messages: USER,
      betas: ["test-beta-2025" as never],
    }),
  openai_chat: (b) => openai(b).chat.completions.create({ model: "gpt-test", messages: USER }),
  openai_chat_stream: async (b) =>
    all(
      await openai(b).chat.completions.create({
        model: "gpt-test",
        messages: USER,
        stream: true,
        stream_options: { include_usage: true },
      }),
    ),
  openai_responses: (b) => openai(b).responses.create({ model: "gpt-test", input: "hello responses" }),
  openai_responses_stream: async (b) =>
    all(await openai(b).responses.create({ model: "gpt-test", input: "hello stream", stream: true })),
  openai_embeddings: (b) => openai(b).embeddings.create({ model: "text-embedding-test", input: ["one", "two"] }),
  azure_chat: (b) =>
    new AzureOpenAI({
      apiKey: "azure-SENTINEL-node-key-0123456789",
      endpoint: b,
      apiVersion: "2024-10-21",
      deployment: "dep",
      maxRetries: 0,
    }).chat.completions.create({ model: "gpt-test", messages: USER }),
  gemini_generate: (b) => gemini(b).models.generateContent({ model: "gemini-test", contents: "hello gemini" }),
  gemini_stream: async (b) =>
    all(await gemini(b).models.generateContentStream({ model: "gemini-test", contents: "hi stream" })),
  gemini_embed: (b) => gemini(b).models.embedContent({ model: "text-embedding-test", contents: ["one", "two"] }),
  ai_anthropic_generate: async (b) => {
    const r = await generateText({
      model: createAnthropic({ apiKey: ANTHROPIC_KEY, baseURL: `${b}/v1` })("claude-test"),
      prompt: "hello ai sdk",
      maxOutputTokens: 64,
      maxRetries: 0,
    });
    return { text: r.text, usage: r.usage, finishReason: r.finishReason };
  },
  ai_anthropic_stream: async (b) => {
    const r = streamText({
      model: createAnthropic({ apiKey: ANTHROPIC_KEY, baseURL: `${b}/v1` })("claude-test"),
      prompt: "hello ai stream",
      maxOutputTokens: 64,
      maxRetries: 0,
    });
    return { parts: await all(r.textStream), usage: await r.usage };
  },
  ai_openai_responses: async (b) => {
    const r = await generateText({
      model: createOpenAI({ apiKey: OPENAI_KEY, baseURL: `${b}/v1` })("gpt-test"),
      prompt: "hello ai responses",
      maxOutputTokens: 64,
      maxRetries: 0,
    });
    return { text: r.text, usage: r.usage, finishReason: r.finishReason };
  },
  ai_openai_chat_stream: async (b) => {
    const r = streamText({
      model: createOpenAI({ apiKey: OPENAI_KEY, baseURL: `${b}/v1` }).chat("gpt-test"),
      prompt: "hello ai chat",
      maxOutputTokens: 64,
      maxRetries: 0,
    });
    return { parts: await all(r.textStream), usage: await r.usage };
  },
};

let harness: ChildProcessWithoutNullStreams;
let lines: AsyncIterator<string>;
let proxy = "";
const folder = mkdtempSync(join(tmpdir(), "llmvcr-node-"));
const recorded = new Map<string, unknown>();

async function next(): Promise<Record<string, unknown>> {
  const line = await lines.next();
  assert.ok(!line.done, "the harness ended early");
  return JSON.parse(line.value);
}

before(async () => {
  harness = spawn(process.env.PYTHON ?? "python3", [join(HERE, "harness.py"), folder]);
  harness.stderr.pipe(process.stderr);
  lines = createInterface({ input: harness.stdout })[Symbol.asyncIterator]();
  proxy = String((await next()).proxy);
});

after(() => {
  harness?.stdin.end();
});

test("every call shape records through the proxy", async () => {
  for (const [name, shape] of Object.entries(SHAPES)) {
    recorded.set(name, plain(await shape(`${proxy}/cassettes/node-${name}`)));
  }
  const written = readdirSync(folder).filter((f) => f.endsWith(".yaml"));
  assert.equal(written.length, Object.keys(SHAPES).length);
  for (const file of written) {
    const text = readFileSync(join(folder, file), "utf8");
    assert.ok(!text.includes("SENTINEL"), `a key was written to ${file}`);
  }
});

test("a call that names no cassette is refused, not sent, not retried", async () => {
  const client = new Anthropic({ apiKey: ANTHROPIC_KEY, baseURL: proxy }); // default: 2 retries
  await assert.rejects(
    client.messages.create({ model: "claude-test", max_tokens: 8, messages: USER }),
    (err: InstanceType<typeof Anthropic.APIError>) =>
      err.status === 424 && String(err.message).includes("llmvcr: POST /v1/messages names no cassette"),
  );
});

async function exampleHelper(): Promise<unknown> {
  const tape = await cassette("the example helper", {}, proxy);
  const message = await anthropic(tape.baseURL).messages.create({ model: "claude-test", max_tokens: 64, messages: USER });
  return { message: plain(message), summary: await tape.close() };
}

let helperRecorded: any;

test("the example's helper opens a cassette per test and closes it with a summary", async () => {
  helperRecorded = await exampleHelper();
  assert.equal(helperRecorded.summary.recorded, 1);
  assert.ok(helperRecorded.summary.path.endsWith("the-example-helper.yaml"));
});

test("every call shape replays with the LLM server stopped", async () => {
  harness.stdin.write("replay\n");
  const seen = await next();
  assert.ok(Number(seen.requests) >= Object.keys(SHAPES).length);
  for (const [name, shape] of Object.entries(SHAPES)) {
    assert.deepEqual(plain(await shape(`${proxy}/cassettes/node-${name}`)), recorded.get(name), name);
  }
  const replayed: any = await exampleHelper();
  assert.deepEqual(replayed.message, helperRecorded.message);
  assert.equal(replayed.summary.replayed, 1);
  assert.equal(replayed.summary.recorded, 0);
});

test("a second run, and 16 clients at once, replay again from cassettes no test opened", async () => {
  for (const [name, shape] of Object.entries(SHAPES)) {
    assert.deepEqual(plain(await shape(`${proxy}/cassettes/node-${name}`)), recorded.get(name), `${name}, run 2`);
  }
  const shape = SHAPES.anthropic_create;
  const answers = await Promise.all(Array.from({ length: 16 }, () => shape(`${proxy}/cassettes/node-anthropic_create`)));
  for (const answer of answers) assert.deepEqual(plain(answer), recorded.get("anthropic_create"));
});

test("a call the cassette does not hold is llmvcr's divergence, as the SDK's own error", async () => {
  const client = new OpenAI({
    apiKey: OPENAI_KEY,
    baseURL: `${proxy}/v1`,
    defaultHeaders: { "x-llmvcr-cassette": "node-openai_chat" },
  });
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "not recorded" }] }),
    (err: InstanceType<typeof OpenAI.APIError>) =>
      err.status === 424 && String(err.message).includes("llmvcr: no recorded entry in"),
  );
});
