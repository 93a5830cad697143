// An assistant that connects by signing in, written with the protocol's own
// TypeScript SDK (its OAuth client: auth() behind the transport, with an
// OAuthClientProvider). oauth_test.go (TestTheTypeScriptSDKConnectsBySigningIn)
// runs `node oauth.mjs MCP_URL REDIRECT_URL MODE [CLIENT_ID_URL]` against the
// local stack and talks with it one JSON line at a time:
//
//   out {"authorize": url, "challenge": the first 401's WWW-Authenticate}
//   in  the redirect URL the browser reached (with the code)
//   out {"tools", "job", "isError", "refreshed", "afterRefresh", "client"}
//   in  "revoked" (once the connection is revoked in the console)
//   out {"refused": bool, "afterMs": n, "reauthorize": bool, "error"}
//
// MODE is "public" (dynamic registration, no secret), "secret" (dynamic
// registration as client_secret_post, as claude.ai's connector registers)
// or "document" (the client ID is CLIENT_ID_URL, a client ID metadata
// document the test serves; the SDK takes only https ones through
// clientMetadataUrl, so this provider presents the URL as its client ID).
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [mcpURL, redirectURL, mode, documentURL] = process.argv.slice(2);
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const next = async () => (await lines.next()).value;
const say = (o) => console.log(JSON.stringify(o));

// The provider keeps everything in memory, as a session of one assistant.
const kept = { client: undefined, tokens: undefined, verifier: undefined, redirects: [] };
if (mode === 'document') kept.client = { client_id: documentURL };
const provider = {
  get redirectUrl() { return redirectURL; },
  get clientMetadata() {
    return {
      client_name: `SDK assistant (${mode})`,
      redirect_uris: [redirectURL],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: mode === 'secret' ? 'client_secret_post' : 'none',
    };
  },
  clientInformation: () => kept.client,
  saveClientInformation: (c) => { kept.client = c; },
  tokens: () => kept.tokens,
  saveTokens: (t) => { kept.tokens = t; },
  redirectToAuthorization: (url) => { kept.redirects.push(url.toString()); },
  saveCodeVerifier: (v) => { kept.verifier = v; },
  codeVerifier: () => kept.verifier,
  invalidateCredentials: (scope) => { if (scope === 'tokens' || scope === 'all') kept.tokens = undefined; },
};

// The first 401's challenge, as the transport meets it.
let challenge = null;
const watched = async (url, init) => {
  const resp = await fetch(url, init);
  if (resp.status === 401 && challenge === null) challenge = resp.headers.get('www-authenticate');
  return resp;
};
const transport = () => new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider, fetch: watched });

// 1. Connecting without a token: 401, discovery, registration, and the
// authorization URL handed to the "browser".
const first = transport();
try {
  await new Client({ name: 'sdk-assistant', version: '1.0.0' }).connect(first);
  throw new Error('connected without signing in');
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
}
say({ authorize: kept.redirects.at(-1), challenge });

// 2. The browser came back with a code: exchanged with the PKCE verifier.
const back = new URL(await next());
await first.finishAuth(back.searchParams.get('code'));
const client = new Client({ name: 'sdk-assistant', version: '1.0.0' });
await client.connect(transport());
const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const created = await client.callTool({
  name: 'generate_image_model_e_4',
  arguments: { prompt: 'a lighthouse at dusk', width: 96, height: 64, wait_seconds: 20 },
});

// 3. A refresh: auth() with tokens kept uses the refresh token, and the
// new access token works.
const before = kept.tokens.access_token;
const refreshedResult = await auth(provider, { serverUrl: new URL(mcpURL) });
const refreshed = refreshedResult === 'AUTHORIZED' && kept.tokens.access_token !== before;
const again = await client.callTool({ name: 'get_job', arguments: { job_id: created.structuredContent?.job_id ?? '' } });
say({
  tools,
  job: created.structuredContent,
  isError: created.isError ?? false,
  refreshed,
  afterRefresh: again.structuredContent?.status ?? null,
  client: { id: kept.client?.client_id ?? null, secret: Boolean(kept.client?.client_secret) },
});

// 4. Revoked in the console: the next calls are refused (401; the
// refresh token is refused too, so the SDK asks to authorize again).
if ((await next()) !== 'revoked') throw new Error('expected "revoked"');
const start = Date.now();
const redirectsBefore = kept.redirects.length;
let refused = false;
let error = null;
while (Date.now() - start < 10000) {
  try {
    await client.callTool({ name: 'list_jobs', arguments: { limit: 1 } });
  } catch (e) {
    refused = e instanceof UnauthorizedError || /401/.test(String(e));
    error = String(e);
    break;
  }
  await new Promise((r) => setTimeout(r, 200));
}
say({ refused, afterMs: Date.now() - start, reauthorize: kept.redirects.length > redirectsBefore, error });
await client.close().catch(() => {});
process.exit(0);
