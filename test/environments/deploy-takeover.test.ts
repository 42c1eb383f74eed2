import test from 'ava';
import { DeployerToken } from '../../core/ports/environments.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { RecordingDeployer } from '../fixtures/deployer.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { envWorld, eventsOf, example, settled, sha, type EnvWorld } from './helpers.ts';

/**
 * Direct deploys on the work engine (plugins/environments/deploys.ts): a deploy accepted by one
 * process whose lease is lost (the process died or stalled past work.lease_seconds) is taken over
 * by an orchestrator and finished there; the first process, if it comes back, writes nothing.
 * (test/chaos/work-takeover.test.ts kills a real server process instead.)
 */
const WORK = { lease_seconds: 0.6, poll_ms: 100 };
let database: TestDatabase;
let w: EnvWorld;
let other: TestServer;
const otherDeployer = new RecordingDeployer();
const base = () => `/projects/${w.projectA}/environments`;

test.before(async () => {
  database = await createTestDatabase();
  w = await envWorld('takeover', example('staging.yaml'), { database, overrides: { work: WORK } });
  w.releases.add(w.projectA, { id: 'rel_v1', tag: 'v1', git_sha: sha('a'), manifest_hash: null, image_digests: { web: 'sha256:' + 'a'.repeat(64) } });
  // The other process: an orchestrator too, with its own deployer (the same engine or cluster in production).
  other = await startTestServer({
    database,
    overrides: { roles: ['api', 'orchestrator'], work: WORK },
    configure: (c) => {
      c.registerInstance(DeployerToken, otherDeployer);
      c.registerInstance(ReleasesToken, w.releases);
    },
  });
});

test.after.always(async () => {
  await other?.stop();
  await w?.ctx.srv.stop();
  await database?.drop();
});

test.serial('a deploy whose process lost its lease mid-deploy is finished by another process; the first one then writes nothing', async (t) => {
  let release!: () => void;
  w.deployer.hold = new Promise<void>((r) => (release = r));
  const res = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1' });
  t.is(res.statusCode, 202, JSON.stringify(res.body));
  const id = res.body.id as string;
  for (let i = 0; i < 200 && w.deployer.calls.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.deepEqual(w.deployer.calls, ['deploy staging v1'], 'the accepting process started it');
  // The accepting process stops renewing its lease, as a dead one would (its heartbeats find another token).
  await w
    .db('work_items')
    .where({ queue: 'deploys', key: id })
    .update({ lease_token: w.db.raw('gen_random_uuid()') });

  const ended = await settled(w, 'staging', id, w.projectA, 20_000);
  t.like(ended, { status: 'succeeded', error_message: null });
  t.deepEqual(otherDeployer.calls, ['deploy staging v1'], 'the other process carried it out');
  t.like((await w.owner.api.get(`${base()}/staging`)).body, { current_release: { tag: 'v1' }, health: 'healthy' });
  const item = await w.db('work_items').where({ queue: 'deploys', key: id }).first();
  t.like(item, { status: 'done', attempts: 2 });

  // The first process comes back: its deployer answers, but its lease is gone, so its end is refused.
  release();
  await new Promise((r) => setTimeout(r, 300));
  const after = (await w.owner.api.get(`${base()}/staging/deploys/${id}`)).body;
  t.is(after.completed_at, ended.completed_at, 'the stale process changed nothing');
  t.deepEqual(
    (await eventsOf(w, 'system.deploy.%')).map((e: any) => e.type),
    ['system.deploy.started', 'system.deploy.succeeded'],
  );
  const log = (await w.owner.api.get(`${base()}/staging/deploys/${id}/logs?limit=100`)).body.data.map((l: any) => l.line);
  t.true(
    log.some((l: string) => l.includes('carrying it out again here (attempt 2)')),
    log.join('\n'),
  );
  t.is(log.filter((l: string) => l.startsWith('deploy succeeded')).length, 1, log.join('\n'));
  const seqs = (await w.owner.api.get(`${base()}/staging/deploys/${id}/logs?limit=100`)).body.data.map((l: any) => l.seq);
  t.deepEqual(
    seqs,
    seqs.map((_: number, i: number) => i + 1),
    'the log goes on after the lines the first process wrote',
  );
});

test.serial('a deploy no process can carry out ends failed after its attempts, saying why (no more "abandoned")', async (t) => {
  w.releases.add(w.projectA, { id: 'rel_v2', tag: 'v2', git_sha: sha('b'), manifest_hash: null, image_digests: { web: 'sha256:' + 'b'.repeat(64) } });
  let release!: () => void;
  w.deployer.hold = new Promise<void>((r) => (release = r));
  let releaseOther!: () => void;
  otherDeployer.hold = new Promise<void>((r) => (releaseOther = r));
  const res = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v2' });
  t.is(res.statusCode, 202);
  const id = res.body.id as string;
  // Every owner loses its lease as soon as it has one, until the attempts are used up.
  const steal = setInterval(() => {
    w.db('work_items')
      .where({ queue: 'deploys', key: id, status: 'running' })
      .update({ lease_token: w.db.raw('gen_random_uuid()') })
      .then(
        () => undefined,
        () => undefined,
      );
  }, 50);
  try {
    const ended = await settled(w, 'staging', id, w.projectA, 30_000);
    t.is(ended.status, 'failed');
    t.regex(ended.error_message, /could not be carried out .*gave up after its last attempt/);
    t.like(await w.db('work_items').where({ queue: 'deploys', key: id }).first(), { status: 'dead', attempts: 3 });
    t.like((await w.owner.api.get(`${base()}/staging`)).body, { current_release: { tag: 'v1' } });
    t.deepEqual((await eventsOf(w, 'system.deploy.%')).map((e: any) => e.type).slice(-2), ['system.deploy.started', 'system.deploy.failed']);
  } finally {
    clearInterval(steal);
    release();
    releaseOther();
  }
});
