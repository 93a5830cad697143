// An MCP client independent of the Go code: the protocol's own TypeScript
// SDK, pinned by package-lock.json. tsclient_test.go (TestTheTypeScriptSDKClient)
// runs `node client.mjs URL` with MCP_TOKEN set against the local stack, and
// checks what it prints.
//
// It lists the tools, creates an image job that it waits for within the
// call (wait_seconds), downloads the file of the job's first resource link,
// and lists the jobs.
// Output: {"tools": [names], "job": structuredContent, "isError": bool,
//          "links": [{"uri","name","mimeType"}], "download": {"status","bytes","png"},
//          "listed": [job ids]}
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.argv[2]);
const transport = new StreamableHTTPClientTransport(url, {
  requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
});
const client = new Client({ name: 'genjobs-mcp-check', version: '1.0.0' });
await client.connect(transport);

const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const created = await client.callTool({
  name: 'generate_image_model_e_4',
  arguments: { prompt: 'a lighthouse at dusk', width: 96, height: 64, wait_seconds: 20 },
});
const links = created.content.filter((c) => c.type === 'resource_link')
  .map((c) => ({ uri: c.uri, name: c.name, mimeType: c.mimeType }));
let download = null;
if (links.length > 0) {
  const resp = await fetch(links[0].uri);
  const bytes = new Uint8Array(await resp.arrayBuffer());
  const magic = [0x89, 0x50, 0x4e, 0x47];
  download = { status: resp.status, bytes: bytes.length, png: magic.every((b, i) => bytes[i] === b) };
}
const listed = await client.callTool({ name: 'list_jobs', arguments: { limit: 10 } });
await client.close();

console.log(JSON.stringify({
  tools,
  job: created.structuredContent,
  isError: created.isError ?? false,
  links,
  download,
  listed: (listed.structuredContent?.items ?? []).map((j) => j.job_id),
}));
