// The TypeScript MCP SDK's client: over stdio it starts `COMMAND ARGS...` (llmvcr mcp, in the tests); given
// an http(s) URL it connects over streamable HTTP (llmvcr serve --mcp, in the tests). It prints what the
// server answered as one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "llmvcr-node-test", version: "1.0.0" });
const transport = /^https?:\/\//.test(command)
  ? new StreamableHTTPClientTransport(new URL(command))
  : new StdioClientTransport({ command, args });
await client.connect(transport);
const tools = await client.listTools();
const now = await client.callTool({ name: "now", arguments: {} });
const added = await client.callTool({ name: "add", arguments: { a: 4, b: 5 } });
console.log(JSON.stringify({
  tools: tools.tools.map((t) => t.name),
  now: now.content[0].text,
  add: added.content[0].text,
}));
await client.close();
