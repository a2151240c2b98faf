// A cassette per test through `llmvcr serve`: copy this file into your project.
//
//   const tape = await cassette("summarises the report");   // opens cassettes/summarises-the-report.yaml
//   const client = new Anthropic({ baseURL: tape.baseURL });  // this client's calls use that cassette
//   ...
//   await tape.close();                                      // written; throws if an entry went unplayed
//
// The proxy's URL comes from LLMVCR_PROXY_URL (what `llmvcr serve --env-file` writes), else the
// argument. Options are use_cassette's: { record_mode: "none" }, { allow_playback_repeats: true }, ...
//
// A cassette that replays only (CI set, or record_mode "none") needs no key: each unset key variable
// gets a placeholder the proxy never sends upstream, so `new Anthropic()` builds with no key.

export interface Summary {
  path: string;
  calls: number;
  replayed: number;
  recorded: number;
  unplayed: unknown[];
  /** The 424 messages of the calls no entry answered, first first: the cause of what went unplayed. */
  divergences?: string[];
  summary: string;
}

/** What `llmvcr serve` sets an unset key to when every call replays; the proxy never forwards it. */
export const PLACEHOLDER_KEY = "llmvcr-replay-only-no-key";
const KEY_VARIABLES: [string, string[]][] = [
  ["ANTHROPIC_API_KEY", ["ANTHROPIC_AUTH_TOKEN"]],
  ["OPENAI_API_KEY", []],
  ["GEMINI_API_KEY", ["GOOGLE_API_KEY"]],
];

export interface Cassette {
  /** The base URL that sends a client's calls into this cassette (OpenAI's SDK: add "/v1"). */
  baseURL: string;
  /** Close it: pending entries are written; the run's summary comes back. */
  close(options?: { allowUnplayed?: boolean }): Promise<Summary>;
}

/** A file name from a test's name: "summarises the report" -> "summarises-the-report". */
export function cassetteName(testName: string): string {
  return testName.trim().replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "cassette";
}

async function control(url: string, method: string, body?: unknown): Promise<any> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (process.env.LLMVCR_TOKEN) headers["x-llmvcr-token"] = process.env.LLMVCR_TOKEN;
  const response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error ?? `llmvcr: ${method} ${url} answered ${response.status}`);
  return answer;
}

/** Open the cassette for one test on the proxy; its calls record or replay as use_cassette's would. */
export async function cassette(
  testName: string,
  options: Record<string, unknown> = {},
  proxy: string = process.env.LLMVCR_PROXY_URL ?? "http://127.0.0.1:8765",
): Promise<Cassette> {
  const root = proxy.replace(/\/cassettes\/[^/]+\/?$/, "").replace(/\/$/, "");
  const name = encodeURIComponent(cassetteName(testName));
  const opened = await control(`${root}/_llmvcr/cassettes/${name}`, "POST", options);
  if (opened.record_mode === "none") {
    for (const [variable, others] of KEY_VARIABLES) {
      if (!process.env[variable] && !others.some((o) => process.env[o])) process.env[variable] = PLACEHOLDER_KEY;
    }
  }
  return {
    baseURL: `${root}/cassettes/${name}`,
    async close({ allowUnplayed = false } = {}) {
      const summary: Summary = await control(`${root}/_llmvcr/cassettes/${name}`, "DELETE");
      if (!allowUnplayed && summary.unplayed.length > 0) {
        // a throw here replaces the test's own error (JS `finally`): so the first divergence leads
        const first = summary.divergences?.[0];
        if (first) throw new Error(`${first}\n\nllmvcr: ${summary.summary}`);
        throw new Error(`llmvcr: ${summary.summary}; the code no longer makes those calls, or the cassette is stale`);
      }
      return summary;
    },
  };
}
