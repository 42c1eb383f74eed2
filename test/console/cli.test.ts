/** `svc console` (the compiled CLI, a subprocess) against a real server: a one-time login link, printed when no browser can open. */
import test from 'ava';
import { rm } from 'node:fs/promises';
import { runCli, showRun, tempHome } from '../cli/helpers.ts';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let home = '';
let token = '';

test.before(async () => {
  server = await startTestServer();
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const signIn = (code: string) =>
  fetch(`${server.url}/auth/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-csrf': '1' },
    body: JSON.stringify({ code }),
  });

test('svc console prints only a link on stdout (no display here; the advice on stderr) that signs the console in once; --json gives the link as JSON', async (t) => {
  const args = ['console'];
  const r = await runCli(home, args, { SVC_API_URL: server.url, SVC_TOKEN: token });
  t.is(r.code, 0, showRun(args, r));
  const url = /^(http:\/\/\S+\/console\/login#code=(\S+))\n$/.exec(r.stdout);
  t.truthy(url, r.stdout);
  t.true(r.stderr.startsWith(`Open this link within a minute`));
  const printed = await runCli(home, ['console', '--print'], { SVC_API_URL: server.url, SVC_TOKEN: token });
  t.regex(printed.stdout, /^http:\/\/\S+\/console\/login#code=\S+\n$/, showRun(['console', '--print'], printed));
  t.false(r.stdout.includes(token));

  const first = await signIn(url![2]);
  t.is(first.status, 200);
  t.regex(first.headers.get('set-cookie') ?? '', /svc_session=.+HttpOnly/);
  t.is((await signIn(url![2])).status, 401);

  const json = await runCli(home, ['console', '--json'], { SVC_API_URL: server.url, SVC_TOKEN: token });
  t.is(json.code, 0, showRun(['console', '--json'], json));
  const link = JSON.parse(json.stdout);
  t.regex(link.url, /\/console\/login#code=/);
  t.truthy(Date.parse(link.expires_at));
});

test('svc console without a token fails with the API words; an extra argument is a usage error', async (t) => {
  const anonymous = await runCli(home, ['console'], { SVC_API_URL: server.url });
  t.is(anonymous.code, 1);
  t.regex(anonymous.stderr, /missing bearer token/);
  const extra = await runCli(home, ['console', 'now'], { SVC_API_URL: server.url, SVC_TOKEN: token });
  t.is(extra.code, 2);
  t.regex(extra.stderr, /unexpected argument "now"/);
});
