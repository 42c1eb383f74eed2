import test from 'ava';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UpstreamFailed } from '../../core/errors.ts';
import { HarnessRegistryToken, type HarnessRegistry } from '../../core/ports/harness.ts';
import { Tokens } from '../../core/tokens.ts';
import { as, bootstrapAdmin, call, startTestServer, type TestServer } from '../support/server.ts';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const CLIENT_ID = '9d1c250a-e61b-44d9-88ed-5944d1962f5e';

// Only the secrets this test stores may count as the harness's credentials.
for (const name of Object.keys(process.env)) if (/^CLAUDE_CODE_|^ANTHROPIC_/.test(name)) delete process.env[name];

/** A token endpoint: records each refresh grant and answers with what the test queued (or a fresh pair). */
interface TokenEndpoint {
  url: string;
  grants: Record<string, unknown>[];
  next: { status: number; body: Record<string, unknown> }[];
  close(): Promise<void>;
}
async function tokenEndpoint(): Promise<TokenEndpoint> {
  const grants: Record<string, unknown>[] = [];
  const next: TokenEndpoint['next'] = [];
  const server: HttpServer = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      grants.push({ path: req.url, contentType: req.headers['content-type'], ...JSON.parse(body) });
      const n = grants.length;
      const answer = next.shift() ?? { status: 200, body: { access_token: `at-${n}`, refresh_token: `rt-${n + 1}`, expires_in: 3600, token_type: 'Bearer' } };
      // Slow enough that callers racing for one login all arrive while the first exchange is under way.
      setTimeout(() => res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body)), 100);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/oauth/token`,
    grants,
    next,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

let s: TestServer;
let endpoint: TokenEndpoint;
let registry: HarnessRegistry;
let admin: ReturnType<typeof as>;
let adminToken: string;
const rows = () => s.kernel.container.resolve(Tokens.Db)('harness_oauth_tokens');
/** Makes the stored access token expire `seconds` from now. */
const expireIn = (seconds: number) => rows().update({ expires_at: new Date(Date.now() + seconds * 1000) });

test.before(async () => {
  endpoint = await tokenEndpoint();
  s = await startTestServer({
    overrides: {
      harnesses: { harness_b: { command: path.join(BIN, 'fake-claude') } },
      harness_oauth: { token_urls: { anthropic: endpoint.url } },
    },
  });
  registry = s.kernel.container.resolve(HarnessRegistryToken);
  adminToken = (await bootstrapAdmin(s.server)).token;
  admin = as(s.server, adminToken);
  const stored = await admin.post('/system/secrets', { name: 'CLAUDE_CODE_OAUTH_REFRESH_TOKEN', value: 'rt-seed', shared_with_jobs: true });
  if (stored.statusCode !== 201) throw new Error(`secret not stored: ${stored.statusCode}`);
});
test.after.always(async () => {
  await s?.stop();
  await endpoint?.close();
});

test.serial(
  'a stored refresh token makes the Claude harnesses available and is exchanged for an access token; the CLI never gets the refresh token',
  async (t) => {
    const auth = (await admin.get('/harnesses/harness_b')).body.auth;
    t.true(auth.available, auth.reason);
    t.regex(auth.reason, /CLAUDE_CODE_OAUTH_REFRESH_TOKEN/);
    t.is(endpoint.grants.length, 0, 'the auth status exchanges nothing');

    t.deepEqual(await registry.credentials('harness_b'), { CLAUDE_CODE_OAUTH_TOKEN: 'at-1' });
    t.deepEqual(endpoint.grants, [
      { path: '/v1/oauth/token', contentType: 'application/json', grant_type: 'refresh_token', refresh_token: 'rt-seed', client_id: CLIENT_ID },
    ]);
    // harness_a shares the family's login: no second exchange.
    t.deepEqual(await registry.credentials('harness_a'), { CLAUDE_CODE_OAUTH_TOKEN: 'at-1' });
    t.is(endpoint.grants.length, 1);
    const [row] = await rows();
    const stored = JSON.stringify(row);
    t.false(/at-1|rt-seed|rt-2/.test(stored), 'both tokens are sealed at rest');
  },
);

test.serial('the access token is renewed once fewer than 5 minutes remain, with the rotated refresh token', async (t) => {
  const before = endpoint.grants.length;
  await expireIn(301);
  t.deepEqual(await registry.credentials('harness_b'), { CLAUDE_CODE_OAUTH_TOKEN: 'at-1' }, 'more than 5 minutes left: kept');
  t.is(endpoint.grants.length, before);
  await expireIn(299);
  const renewed = (await registry.credentials('harness_b')).CLAUDE_CODE_OAUTH_TOKEN;
  t.is(renewed, `at-${before + 1}`);
  t.is(endpoint.grants.at(-1)!.refresh_token, 'rt-2', 'the refresh token the first exchange returned, not the stored one');
  const [row] = await rows();
  t.true(new Date(row.expires_at).getTime() > Date.now() + 3500_000);
});

test.serial('callers racing for an expiring login cause one exchange (a rotating refresh token is good once)', async (t) => {
  await expireIn(10);
  const before = endpoint.grants.length;
  const tokens = await Promise.all(Array.from({ length: 6 }, () => registry.credentials('harness_b')));
  t.is(endpoint.grants.length, before + 1);
  t.is(new Set(tokens.map((c) => c.CLAUDE_CODE_OAUTH_TOKEN)).size, 1);
});

test.serial(
  'an endpoint that refuses the refresh fails with the code and what to do, never the tokens; an endpoint without expires_in gives an hour',
  async (t) => {
    await expireIn(-1);
    endpoint.next.push({ status: 400, body: { error: 'invalid_grant', error_description: 'refresh token rt-4 was revoked' } });
    const err = await t.throwsAsync(registry.credentials('harness_b'), { instanceOf: UpstreamFailed });
    t.is(
      err!.message,
      'could not refresh the anthropic OAuth login stored as CLAUDE_CODE_OAUTH_REFRESH_TOKEN: the token endpoint answered 400: invalid_grant; store a new refresh token as CLAUDE_CODE_OAUTH_REFRESH_TOKEN',
    );
    endpoint.next.push({ status: 200, body: { access_token: 'at-no-expiry' } });
    t.deepEqual(await registry.credentials('harness_b'), { CLAUDE_CODE_OAUTH_TOKEN: 'at-no-expiry' });
    const [row] = await rows();
    const left = new Date(row.expires_at).getTime() - Date.now();
    t.true(left > 3500_000 && left <= 3600_000, `${left} ms left`);
  },
);

test.serial('a new refresh token stored starts a login of its own', async (t) => {
  const before = endpoint.grants.length;
  t.is((await call(s.server, 'PUT', '/system/secrets/CLAUDE_CODE_OAUTH_REFRESH_TOKEN', { value: 'rt-new-login' }, adminToken)).statusCode, 200);
  await registry.credentials('harness_b');
  t.is(endpoint.grants.length, before + 1);
  t.is(endpoint.grants.at(-1)!.refresh_token, 'rt-new-login');
  t.is(Number((await rows().count({ n: '*' }).first())!.n), 2);
});
