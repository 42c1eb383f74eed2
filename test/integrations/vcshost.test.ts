import test from 'ava';
import { AFTER, HEAD_SHA, issueComment, pullRequest, push } from '../fixtures/vcshost/deliveries.ts';
import { assertError } from '../orgs/helpers.ts';
import { call, deliver, eventsOf, hubSignature, newProject, setSecret, setup, type Ctx } from './helpers.ts';

let ctx: Ctx;
let projectId: string;
let otherProjectId: string;
const SECRET = 'project-one-webhook-secret';
const OTHER_SECRET = 'project-two-webhook-secret';

test.before(async () => {
  ctx = await setup();
  projectId = await newProject(ctx);
  otherProjectId = await newProject(ctx);
  await setSecret(ctx, `/projects/${projectId}`, 'VCSHOST_WEBHOOK_SECRET', SECRET);
  await setSecret(ctx, `/projects/${otherProjectId}`, 'VCSHOST_WEBHOOK_SECRET', OTHER_SECRET);
});
test.after.always(() => ctx?.srv.stop());

/** A project with SECRET of its own, so a test counting its events sees no other test's. */
async function ownProject(): Promise<string> {
  const id = await newProject(ctx);
  await setSecret(ctx, `/projects/${id}`, 'VCSHOST_WEBHOOK_SECRET', SECRET);
  return id;
}

let deliveries = 0;
const deliveryId = () => `72d3162e-cc78-11e3-81ab-4c9367dc${String(++deliveries).padStart(4, '0')}`;

/** A delivery as the host sends it: event and delivery headers, signed with `secret`. */
function send(
  project: string,
  event: string,
  body: object | string,
  opts: { secret?: string | null; delivery?: string; headers?: Record<string, string> } = {},
) {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const secret = opts.secret === undefined ? SECRET : opts.secret;
  return deliver(ctx.srv.server, `/integrations/vcshost/events/${project}`, raw, {
    'x-github-event': event,
    'x-github-delivery': opts.delivery ?? deliveryId(),
    'user-agent': 'GitHub-Hookshot/abc123',
    ...(secret !== null ? { 'x-hub-signature-256': hubSignature(secret, raw) } : {}),
    ...opts.headers,
  });
}

test('a push delivery becomes a pending vcshost.push event with ref, sha, branch and actor', async (t) => {
  const delivery = deliveryId();
  const res = await send(projectId, 'push', push('refs/heads/release/2.0'), { delivery });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  const event = res.body;
  t.regex(event.id, /^evt_/);
  t.like(event, {
    project_id: projectId,
    type: 'vcshost.push',
    source: 'vcshost',
    status: 'pending',
    ref_sha: AFTER,
    ref_branch: 'release/2.0',
    actor_type: 'user',
    actor_id: 'vcshost:octo',
  });
  t.regex(event.dedupe_key, /^vcshost:push:[0-9a-f]{64}$/, 'a push dedupes on the push itself, not on its delivery id');
  const payload = event.payload_json;
  t.is(payload.ref, 'refs/heads/release/2.0');
  t.is(payload.after, AFTER);
  t.is(payload.commits.length, 2);
  t.is(payload.commits[1].message, 'Document it');
  t.is(payload.head_commit.id, AFTER);
  t.deepEqual(payload.repository, {
    id: 3003,
    name: 'widgets',
    full_name: 'acme/widgets',
    html_url: 'https://code.example/acme/widgets',
    clone_url: 'https://code.example/acme/widgets.git',
    ssh_url: 'git@code.example:acme/widgets.git',
    default_branch: 'main',
    private: true,
    owner: { login: 'acme', id: 1001, type: 'Organization', html_url: 'https://code.example/acme' },
  });
  t.deepEqual(payload.sender, { login: 'octo', id: 2002, type: 'User', html_url: 'https://code.example/octo' });
  t.is(payload.repository.stargazers_count, undefined, "the host's other repository fields are not kept");

  const stored = await ctx.srv.kernel.db('events').where({ id: event.id }).first();
  t.is(stored.status, 'pending');
  t.is(stored.request_id, res.headers['x-request-id']);
});

test('a tag push has no branch; a branch deletion has no sha', async (t) => {
  const tag = await send(projectId, 'push', push('refs/tags/v2.0.0'));
  t.is(tag.statusCode, 201);
  t.like(tag.body, { ref_branch: null, ref_sha: AFTER });
  const deleted = await send(projectId, 'push', push('refs/heads/old', '0'.repeat(40)));
  t.is(deleted.statusCode, 201);
  t.like(deleted.body, { ref_branch: 'old', ref_sha: null });
  t.true(deleted.body.payload_json.deleted);
});

test('a pull_request delivery becomes vcshost.pull_request with action, number, head and base', async (t) => {
  const res = await send(projectId, 'pull_request', pullRequest('synchronize', 42));
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.like(res.body, {
    type: 'vcshost.pull_request',
    source: 'vcshost',
    ref_sha: HEAD_SHA,
    ref_branch: 'feature/new',
    actor_id: 'vcshost:octo',
    actor_type: 'user',
  });
  const payload = res.body.payload_json;
  t.is(payload.action, 'synchronize');
  t.is(payload.number, 42);
  t.like(payload.pull_request, { number: 42, title: 'Add the new module', body: 'Adds src/new.ts.', state: 'open', draft: false, merged: false });
  t.deepEqual(payload.pull_request.head, {
    ref: 'feature/new',
    sha: HEAD_SHA,
    label: 'octo:feature/new',
    repo: { full_name: 'octo/widgets', clone_url: 'https://code.example/acme/widgets.git', html_url: 'https://code.example/acme/widgets' },
  });
  t.is(payload.pull_request.base.ref, 'main');
  t.is(payload.pull_request.user.login, 'octo');
  t.is(payload.repository.full_name, 'acme/widgets');
});

test('a bot sender is an app actor', async (t) => {
  const body = { ...pullRequest('opened', 43), sender: { login: 'helper[bot]', id: 5, type: 'Bot' } };
  const res = await send(projectId, 'pull_request', body);
  t.like(res.body, { actor_type: 'app', actor_id: 'vcshost:helper[bot]' });
});

test('a redelivery (same delivery id) answers 200 with the first event and stores nothing', async (t) => {
  const projectId = await ownProject();
  const delivery = deliveryId();
  const first = await send(projectId, 'push', push(), { delivery });
  t.is(first.statusCode, 201);
  const before = (await eventsOf(ctx, projectId)).length;
  const again = await send(projectId, 'push', push(), { delivery });
  t.is(again.statusCode, 200);
  t.deepEqual(again.body, first.body);
  t.is((await eventsOf(ctx, projectId)).length, before);
});

test('other kinds of delivery answer 202 and say they are ignored', async (t) => {
  const projectId = await ownProject();
  const before = (await eventsOf(ctx, projectId)).length;
  for (const [kind, body] of [
    ['issue_comment', issueComment],
    ['ping', { zen: 'Keep it logically awesome.', hook_id: 1 }],
  ] as const) {
    const res = await send(projectId, kind, body);
    t.is(res.statusCode, 202);
    t.deepEqual(res.body, {
      ignored: true,
      message: `vcshost event '${kind}' is ignored: only push, pull_request and pull_request_review deliveries are stored`,
    });
  }
  t.is((await eventsOf(ctx, projectId)).length, before);
});

test('a missing, malformed or wrong signature is 401 and stores nothing', async (t) => {
  const projectId = await ownProject();
  const before = (await eventsOf(ctx, projectId)).length;
  const body = JSON.stringify(push());
  assertError(t, await send(projectId, 'push', body, { secret: null }), 401, 'X-Hub-Signature-256 header is missing');
  assertError(
    t,
    await send(projectId, 'push', body, { secret: null, headers: { 'x-hub-signature-256': 'sha1=abc' } }),
    401,
    'X-Hub-Signature-256 must be sha256=<64 hex digits>',
  );
  const mismatch = "X-Hub-Signature-256 does not match the body signed with the project's webhook secret";
  assertError(t, await send(projectId, 'push', body, { secret: 'not-the-secret' }), 401, mismatch);
  assertError(t, await send(projectId, 'push', body, { secret: OTHER_SECRET }), 401, mismatch);
  // Signed correctly, then changed on the way.
  const tampered = await deliver(
    ctx.srv.server,
    `/integrations/vcshost/events/${projectId}`,
    body.replace('release', 'main').replace('"forced":false', '"forced":true'),
    {
      'x-github-event': 'push',
      'x-github-delivery': deliveryId(),
      'x-hub-signature-256': hubSignature(SECRET, body),
    },
  );
  assertError(t, tampered, 401, mismatch);
  t.is((await eventsOf(ctx, projectId)).length, before);
});

test('a project of its own secret only: the other project accepts its own, not this one', async (t) => {
  const res = await send(otherProjectId, 'push', push(), { secret: OTHER_SECRET });
  t.is(res.statusCode, 201);
  t.is(res.body.project_id, otherProjectId);
  assertError(t, await send(otherProjectId, 'push', push(), { secret: SECRET }), 401, /does not match/);
});

test('an unknown project, or one without a secret, answers exactly like a wrong signature', async (t) => {
  const bare = await newProject(ctx);
  const mismatch = "X-Hub-Signature-256 does not match the body signed with the project's webhook secret";
  assertError(t, await send(bare, 'push', push()), 401, mismatch);
  assertError(t, await send('proj_01h455vb4pex5vsknk084sn02q', 'push', push()), 401, mismatch);
  const deleted = await ownProject();
  t.is((await call(ctx.srv.server, 'DELETE', `/projects/${deleted}`, undefined, ctx.adminToken)).statusCode, 204);
  assertError(t, await send(deleted, 'push', push()), 401, mismatch);
  assertError(t, await send('not-a-project', 'push', push()), 400, /project_id/);
});

test('bad bodies and headers are 400, never 500, and store nothing', async (t) => {
  const projectId = await ownProject();
  const before = (await eventsOf(ctx, projectId)).length;
  assertError(t, await send(projectId, 'push', '{"ref": "refs/heads/main",'), 400, 'the delivery body is not valid JSON');
  assertError(t, await send(projectId, 'push', '[1, 2]'), 400, 'the delivery body must be a JSON object');
  assertError(t, await send(projectId, 'push', ''), 400, 'the delivery body is not valid JSON');
  assertError(t, await send(projectId, 'push', { ...push(), after: 'HEAD' }), 400, /^push delivery: "after" with value "HEAD" fails to match/);
  assertError(t, await send(projectId, 'push', { ...push(), repository: null }), 400, /^push delivery: "repository" must be of type object/);
  assertError(t, await send(projectId, 'pull_request', { ...pullRequest(), number: 'x' }), 400, /^pull_request delivery: "number" must be a number/);
  const { pull_request: _pr, ...noPr } = pullRequest();
  assertError(t, await send(projectId, 'pull_request', noPr), 400, /^pull_request delivery: "pull_request" is required/);
  assertError(t, await send(projectId, 'push', push(), { delivery: 'has spaces in it' }), 400, 'X-GitHub-Delivery is not a delivery id');
  const raw = JSON.stringify(push());
  const noEvent = await deliver(ctx.srv.server, `/integrations/vcshost/events/${projectId}`, raw, { 'x-hub-signature-256': hubSignature(SECRET, raw) });
  assertError(t, noEvent, 400, 'X-GitHub-Event header is missing');
  t.is((await eventsOf(ctx, projectId)).length, before);
});

test('a form-encoded delivery (payload=<json>) is read like a JSON one', async (t) => {
  const raw = new URLSearchParams({ payload: JSON.stringify(push('refs/heads/form')) }).toString();
  const res = await send(projectId, 'push', raw, { headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.is(res.body.ref_branch, 'form');
});

test.serial('an org secret of the name serves the projects that have none', async (t) => {
  const project = await newProject(ctx);
  await setSecret(ctx, `/orgs/${ctx.orgId}`, 'VCSHOST_WEBHOOK_SECRET', 'org-wide-secret');
  try {
    t.is((await send(project, 'push', push(), { secret: 'org-wide-secret' })).statusCode, 201);
    t.is((await send(projectId, 'push', push(), { secret: 'org-wide-secret' })).statusCode, 401, "a project's own secret comes first");
  } finally {
    await call(ctx.srv.server, 'DELETE', `/orgs/${ctx.orgId}/secrets/VCSHOST_WEBHOOK_SECRET`, undefined, ctx.adminToken);
  }
});
