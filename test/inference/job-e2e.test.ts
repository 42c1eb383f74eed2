// A job whose model is managed/<name> runs its harness against the model through svc's proxy: the CLI
// gets the proxy's URL and its job token (never the provider key), and the calls land on the attempt.
import test from 'ava';
import path from 'node:path';
import { managed, target, teardown, world, type World } from './helpers.ts';
import { until } from '../worker/helpers.ts';

const FAKE_CODEX = path.resolve('test/fixtures/bin/fake-codex');
let w: World;
test.before(async () => {
  w = await world({ overrides: { roles: ['api', 'orchestrator', 'worker'], harnesses: { harness_d: { command: FAKE_CODEX } } } });
  const sys = await target(w, { name: 'sys-ai', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  await managed(w, { name: 'fast', target_id: sys.id, upstream_model: 'gpt-fake-1' });
});
test.after.always(() => teardown(w));

test('a harness_d job on managed/fast calls the model through the proxy with its job token; the usage is on its attempt', async (t) => {
  const created = await w.admin.post(`/projects/${w.project}/jobs`, { description: 'Say hello [[fake:proxy]]', harness: 'harness_d', model: 'managed/fast' });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const job = await until(
    async () => {
      const r = await w.admin.get(`/jobs/${created.body.id}`);
      return ['done', 'cancelled'].includes(r.body.phase) ? r.body : null;
    },
    'the job to end',
    60_000,
  );
  const attempts = (await w.admin.get(`/projects/${w.project}/jobs/${job.id}/attempts`)).body.data;
  t.is(job.phase, 'done', JSON.stringify(attempts));
  const lines: { seq: number; line: string }[] = [];
  for (let more = true; more;) {
    const page = await w.admin.get(`/jobs/${job.id}/attempts/${attempts[0].id}/logs?limit=50&after_seq=${lines.at(-1)?.seq ?? 0}`);
    lines.push(...page.body.data);
    more = page.body.pagination.has_more;
  }
  const logs = lines.map((l) => l.line).join('\n');
  t.regex(logs, /model managed\/fast: managed\/fast through svc's inference proxy/);
  t.regex(logs, /model said: /);
  t.false(logs.includes(w.fake.apiKey), 'the provider key never reaches the job');

  const upstream = w.fake.calls.filter((c) => c.body?.model === 'gpt-fake-1');
  t.is(upstream.length, 1, 'the proxy called the upstream once, with the upstream model');
  t.is(upstream[0].headers.authorization, `Bearer ${w.fake.apiKey}`, 'with the target credential, which only svc holds');
  const receipt = (await w.admin.get(`/jobs/${job.id}/receipt`)).body;
  t.true(JSON.stringify(receipt).includes('gpt-fake-1'), `the proxied call is on the attempt's receipt: ${JSON.stringify(receipt)}`);
});
