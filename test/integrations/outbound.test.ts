/**
 * The outbound side of the adapters against local fake servers that speak the code host's REST API
 * and the chat app's Web API (test/support/fake-hosts.ts); no real provider is called.
 */
import test, { type ExecutionContext } from 'ava';
import { createAdapter, type AdapterDeps } from '../../core/adapters.ts';
import { HostApiError } from '../../core/ports/integrations.ts';
import { VcsHostToken } from '../../core/ports/vcshost.ts';
import { ChatAppToken } from '../../core/ports/chatapp.ts';
import { fakeChatApp, fakeCodeHost, type FakeHost } from '../support/fake-hosts.ts';
import { setup } from './helpers.ts';

let codeHost: Awaited<ReturnType<typeof fakeCodeHost>>;
let chat: Awaited<ReturnType<typeof fakeChatApp>>;

test.before(async () => {
  codeHost = await fakeCodeHost({
    tokens: new Set(['ghp_configured', 'ghp_project']),
    repos: new Map([['acme/widgets', new Set(['main', 'feature/new', 'svc/job-1', 'svc/job-2', 'svc/job-3'])]]),
  });
  chat = await fakeChatApp({ tokens: new Set(['xoxb-configured', 'xoxb-caller']), channels: new Set(['C0DEPLOYS']) });
});
test.after.always(async () => {
  await codeHost?.close();
  await chat?.close();
});

const deps = {} as AdapterDeps;
const hub = (options: Record<string, unknown> = {}) =>
  createAdapter('vcshost', { use: 'hub', options: { api_url: `${codeHost.url}/api/v3`, token: 'ghp_configured', ...options } }, deps);
const chatApp = (options: Record<string, unknown> = {}) =>
  createAdapter('chatapp', { use: 'chat', options: { api_url: `${chat.url}/api`, bot_token: 'xoxb-configured', ...options } }, deps);

const lastRequest = (fake: FakeHost) => fake.requests[fake.requests.length - 1];

async function refused(t: ExecutionContext, promise: Promise<unknown>, status: number, message: RegExp) {
  const err = await t.throwsAsync(promise, { instanceOf: HostApiError });
  t.is(err!.status, status);
  t.regex(err!.message, message);
}

test.serial('the kernel serves the configured adapters: create-pr and notify reach the configured hosts', async (t) => {
  const { srv } = await setup({
    adapters: {
      vcshost: { use: 'hub', options: { api_url: `${codeHost.url}/api/v3`, token: 'ghp_configured' } },
      chatapp: { use: 'chat', options: { api_url: `${chat.url}/api`, bot_token: 'xoxb-configured' } },
    },
  });
  try {
    const pr = await srv.kernel.container
      .resolve(VcsHostToken)
      .createPullRequest({ repo: 'acme/widgets', title: 'Job 1', body: 'Made by svc', head: 'svc/job-1', base: 'main' });
    t.like(pr, { state: 'open', head: 'svc/job-1', base: 'main' });
    t.is(pr.url, `${codeHost.url}/acme/widgets/pull/${pr.number}`);
    const posted = await srv.kernel.container.resolve(ChatAppToken).notify({ channel: 'C0DEPLOYS', message: 'Job 1 is done' });
    t.is(posted.channel, 'C0DEPLOYS');
    t.regex(posted.ts, /^\d+\.\d+$/);
  } finally {
    await srv.stop();
  }
});

test.serial('createPullRequest POSTs /repos/{owner}/{repo}/pulls with the token and the fields', async (t) => {
  const pr = await (
    await hub()
  ).createPullRequest({ repo: 'acme/widgets', title: 'Add the new module', body: 'Adds src/new.ts', head: 'feature/new', base: 'main', draft: true });
  const sent = lastRequest(codeHost);
  t.is(sent.method, 'POST');
  t.is(sent.path, '/api/v3/repos/acme/widgets/pulls');
  t.is(sent.headers.authorization, 'Bearer ghp_configured');
  t.is(sent.headers.accept, 'application/vnd.github+json');
  t.is(sent.headers['user-agent'], 'svc');
  t.regex(String(sent.headers['content-type']), /^application\/json/);
  t.deepEqual(sent.body, { title: 'Add the new module', body: 'Adds src/new.ts', head: 'feature/new', base: 'main', draft: true });
  t.deepEqual(pr, { number: pr.number, url: `${codeHost.url}/acme/widgets/pull/${pr.number}`, state: 'open', head: 'feature/new', base: 'main' });
});

test.serial("a caller's token wins over the configured one", async (t) => {
  await (await hub()).createPullRequest({ repo: 'acme/widgets', title: 'Job 2', head: 'svc/job-2', base: 'main', token: 'ghp_project' });
  t.is(lastRequest(codeHost).headers.authorization, 'Bearer ghp_project');
  t.deepEqual(lastRequest(codeHost).body, { title: 'Job 2', body: '', head: 'svc/job-2', base: 'main' });
});

test('the code host refusing: bad token, unknown repository, validation failures', async (t) => {
  const host = await hub();
  await refused(
    t,
    host.createPullRequest({ repo: 'acme/widgets', title: 'x', head: 'feature/new', base: 'main', token: 'ghp_revoked' }),
    401,
    /failed \(401\): Bad credentials$/,
  );
  await refused(
    t,
    host.createPullRequest({ repo: 'acme/gadgets', title: 'x', head: 'feature/new', base: 'main' }),
    404,
    /acme\/gadgets failed \(404\): Not Found$/,
  );
  await refused(
    t,
    host.createPullRequest({ repo: 'acme/widgets', title: 'x', head: 'nope', base: 'main' }),
    422,
    /failed \(422\): Validation Failed: invalid$/,
  );
  await refused(
    t,
    host.createPullRequest({ repo: 'acme/widgets', title: 'x', head: 'main', base: 'main' }),
    422,
    /Validation Failed: No commits between main and main$/,
  );
  await host.createPullRequest({ repo: 'acme/widgets', title: 'once', head: 'svc/job-3', base: 'main' });
  await refused(
    t,
    host.createPullRequest({ repo: 'acme/widgets', title: 'twice', head: 'svc/job-3', base: 'main' }),
    422,
    /A pull request already exists for acme:svc\/job-3\.$/,
  );
  await refused(t, host.createPullRequest({ repo: 'widgets', title: 'x', head: 'a', base: 'b' }), 0, /repo 'widgets' is not owner\/name/);
  await refused(t, (await hub({ token: null })).createPullRequest({ repo: 'acme/widgets', title: 'x', head: 'a', base: 'b' }), 0, /no code-host token/);
});

test.serial('a host that does not answer in time, or at all, is a HostApiError with status 0', async (t) => {
  codeHost.delayMs = 1000;
  try {
    await refused(
      t,
      (await hub({ timeout_ms: 150 })).createPullRequest({ repo: 'acme/widgets', title: 'x', head: 'svc/job-1', base: 'main' }),
      0,
      /no answer within 150 ms/,
    );
  } finally {
    codeHost.delayMs = 0;
  }
  const closed = await fakeChatApp({ tokens: new Set(), channels: new Set() });
  await closed.close();
  const api = `${closed.url}/api/v3`;
  await refused(
    t,
    (await hub({ api_url: api })).createPullRequest({ repo: 'acme/widgets', title: 'x', head: 'a', base: 'b' }),
    0,
    new RegExp(`^POST ${api}/repos/acme/widgets/pulls failed: .*ECONNREFUSED`),
  );
});

test.serial('notify POSTs chat.postMessage with the bot token, channel, text and thread', async (t) => {
  const app = await chatApp();
  const posted = await app.notify({ channel: 'C0DEPLOYS', message: 'Release 2.0 is out', thread_ts: '1717999999.000050' });
  const sent = lastRequest(chat);
  t.is(sent.path, '/api/chat.postMessage');
  t.is(sent.headers.authorization, 'Bearer xoxb-configured');
  t.deepEqual(sent.body, { channel: 'C0DEPLOYS', text: 'Release 2.0 is out', thread_ts: '1717999999.000050' });
  t.deepEqual(posted, { channel: 'C0DEPLOYS', ts: posted.ts });
  await app.notify({ channel: 'C0DEPLOYS', message: 'plain', token: 'xoxb-caller' });
  t.is(lastRequest(chat).headers.authorization, 'Bearer xoxb-caller');
  t.deepEqual(lastRequest(chat).body, { channel: 'C0DEPLOYS', text: 'plain' });
});

test.serial("the chat app's refusals (ok: false) and rate limits are HostApiErrors naming the app's error", async (t) => {
  const app = await chatApp();
  await refused(t, app.notify({ channel: 'C0NOWHERE', message: 'x' }), 200, /posting to C0NOWHERE failed: channel_not_found$/);
  await refused(t, app.notify({ channel: 'C0DEPLOYS', message: 'x', token: 'xoxb-revoked' }), 200, /invalid_auth$/);
  await refused(t, app.notify({ channel: 'C0DEPLOYS', message: '' }), 200, /no_text$/);
  await refused(t, (await chatApp({ bot_token: null })).notify({ channel: 'C0DEPLOYS', message: 'x' }), 0, /no chat bot token/);
  chat.rateLimited = true;
  try {
    await refused(t, app.notify({ channel: 'C0DEPLOYS', message: 'x' }), 429, /ratelimited$/);
  } finally {
    chat.rateLimited = false;
  }
});

test('adapter options are validated with their path, and an unknown adapter is named', async (t) => {
  await t.throwsAsync(createAdapter('vcshost', { use: 'hub', options: { api_url: 'ftp://x' } }, deps), {
    message: /adapters\.vcshost\.options\.api_url: "api_url" must be a valid uri/,
  });
  await t.throwsAsync(createAdapter('chatapp', { use: 'chat', options: { timeout_ms: 5 } }, deps), {
    message: /adapters\.chatapp\.options\.timeout_ms: .* greater than or equal to 100/,
  });
  await t.throwsAsync(createAdapter('vcshost', { use: 'lab', options: {} }, deps), {
    message: /adapters\.vcshost\.use: 'lab' is neither a built-in vcshost adapter \(hub\)/,
  });
});
