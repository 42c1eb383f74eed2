import test from 'ava';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { newUser, setup, unique, type Ctx, type User } from '../orgs/helpers.ts';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

// Only the secrets this test stores may count as credentials.
for (const name of Object.keys(process.env)) if (/_API_KEY$|^CLAUDE_CODE_|^ANTHROPIC_|^CODEX_|^GEMINI_|^GOOGLE_/.test(name)) delete process.env[name];

const MANIFEST = `
x-svc:
  agents:
    version: 1
    profiles:
      default: [{ harness: harness_d, model: gpt-x }, { harness: harness_b, model: claude-y, reasoning_effort: high }]
      careful: [{ harness: harness_b, reasoning_effort: x-high }]
    availability: { drop_unavailable: true }
`;

let ctx: Ctx;
let owner: User;
let outsider: User;
let org: string;
let project: string;
let bare: string;

test.before(async () => {
  ctx = await setup({
    overrides: { harnesses: { harness_b: { command: path.join(BIN, 'fake-claude') }, harness_d: { command: path.join(BIN, 'fake-codex') } } },
  });
  owner = await newUser(ctx, 'agents-owner');
  outsider = await newUser(ctx, 'agents-outsider');
  org = (await owner.api.post('/orgs', { name: unique('Agents') })).body.id;
  project = (await owner.api.post('/projects', { org_id: org, name: 'agents', slug: 'agnt1' })).body.id;
  bare = (await owner.api.post('/projects', { org_id: org, name: 'bare', slug: 'bare1' })).body.id;
  const synced = await owner.api.post(`/projects/${project}/manifest`, { yaml: MANIFEST });
  if (synced.statusCode !== 200) throw new Error(`manifest: ${synced.statusCode} ${JSON.stringify(synced.body)}`);
  // Claude credentials for this org only; no Codex credentials anywhere.
  const secret = await owner.api.post(`/orgs/${org}/secrets`, { name: 'ANTHROPIC_API_KEY', value: 'sk-ant-agents-org' });
  if (secret.statusCode !== 201) throw new Error(`secret: ${secret.statusCode} ${JSON.stringify(secret.body)}`);
});
test.after.always(async () => {
  await ctx?.srv.stop();
});

test("a project's agents: its profiles, what each runs now in its scope, and the harnesses ready there", async (t) => {
  const res = await owner.api.get(`/projects/${project}/agents`);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  const body = res.body;
  t.is(body.version, 1);
  t.true(body.drop_unavailable);
  t.regex(body.manifest.manifest_hash, /^sha256:/);
  // harness_d has no credentials in this scope: dropped, and harness_b runs with the entry's own fields.
  t.like(body.default, { harness: 'harness_b', model: 'claude-y', reasoning_effort: 'high', source: 'default_profile', profile: 'default', available: true });
  t.is(body.default.dropped.length, 1);
  t.is(body.default.dropped[0].harness, 'harness_d');
  t.deepEqual(
    body.profiles.map((p: { name: string }) => p.name),
    ['careful', 'default'],
  );
  t.like(body.profiles[0].runs, { harness: 'harness_b', reasoning_effort: 'x-high', source: 'profile', profile: 'careful' });
  t.deepEqual(body.profiles[0].entries, [{ harness: 'harness_b', reasoning_effort: 'x-high' }]);
  const ready = Object.fromEntries(body.harnesses.map((h: { name: string; available: boolean }) => [h.name, h.available]));
  t.like(ready, { harness_b: true, harness_d: false });
  t.false(JSON.stringify(body).includes('sk-ant-agents-org'), 'no credential value');
});

test('a project without a manifest: no profiles, the server default', async (t) => {
  const res = await owner.api.get(`/projects/${bare}/agents`);
  t.is(res.statusCode, 200);
  t.like(res.body, { manifest: null, version: null, drop_unavailable: false, profiles: [] });
  t.like(res.body.default, { harness: 'harness_b', source: 'server_default', available: true });
});

test("an org's agents: readiness in its scope and each project's default, paged", async (t) => {
  const res = await owner.api.get(`/orgs/${org}/agents?limit=1`);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body.pagination, { limit: 1, offset: 0, count: 1, total: 2, has_more: true });
  t.is(res.body.projects[0].project_id, project, 'oldest first');
  t.deepEqual(res.body.projects[0].profiles, ['careful', 'default'], 'by name');
  t.like(res.body.projects[0].default, { harness: 'harness_b', profile: 'default' });
  t.true(res.body.harnesses.find((h: { name: string }) => h.name === 'harness_b').available);
  const next = await owner.api.get(`/orgs/${org}/agents?limit=1&offset=1`);
  t.is(next.body.projects[0].project_id, bare);
  t.like(next.body.projects[0], { manifest: null, profiles: [] });
});

test('another tenant sees neither listing (404), and bad input is 400 naming the field', async (t) => {
  t.is((await outsider.api.get(`/projects/${project}/agents`)).statusCode, 404);
  t.is((await outsider.api.get(`/orgs/${org}/agents`)).statusCode, 404);
  const outsiderOrg = (await outsider.api.post('/orgs', { name: unique('Elsewhere') })).body.id;
  const theirs = await outsider.api.get(`/orgs/${outsiderOrg}/agents`);
  t.is(theirs.statusCode, 200);
  t.false(theirs.body.harnesses.find((h: { name: string }) => h.name === 'harness_b').available, "the other org's secret does not count here");
  const bad = await owner.api.get(`/orgs/${org}/agents?limit=0`);
  t.is(bad.statusCode, 400);
  t.regex(bad.body.message, /limit/);
  t.is((await owner.api.get('/projects/nope/agents')).statusCode, 400);
});
