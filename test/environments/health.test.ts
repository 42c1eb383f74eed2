/** Health reconciliation: what one pass records and emits, and the orchestrator loop around it (test/docker/flows.docker.ts runs it on the engine). */
import test from 'ava';
import pino from 'pino';
import { EnvironmentService } from '../../plugins/environments/service.ts';
import { HealthReconciler } from '../../plugins/environments/health.ts';
import { envWorld, eventsOf, example, settled, sha, type EnvWorld } from './helpers.ts';

const YAML = `${example('staging.yaml')}  review: { type: persistent }\n  idle: { type: persistent }\n`;

let w: EnvWorld;
let service: EnvironmentService;
test.before(async () => {
  w = await envWorld('envhealth', YAML);
  service = w.ctx.srv.server.app.container.resolve(EnvironmentService);
  w.releases.add(w.projectA, { id: 'rel_h1', tag: 'v1', git_sha: sha('a'), manifest_hash: null, image_digests: { web: 'sha256:' + 'a'.repeat(64) } });
  for (const env of ['staging', 'review']) {
    const res = await w.owner.api.post(`/projects/${w.projectA}/environments/${env}/deploy`, { release_tag: 'v1' });
    if (res.statusCode !== 202) throw new Error(`deploy: ${res.statusCode} ${JSON.stringify(res.body)}`);
    await settled(w, env, res.body.id);
  }
  deployed = (await allHealthEvents()).length;
});
test.after.always(() => w?.ctx.srv.stop());

const envOf = async (name: string) => (await w.owner.api.get(`/projects/${w.projectA}/environments/${name}`)).body;
const allHealthEvents = async () =>
  (await eventsOf(w, 'system.environment.health.changed')).map((e: any) => `${e.env_name} ${e.payload_json.previous}→${e.payload_json.health}`);
/** The health changes emitted after the deploys' own (unknown→healthy). */
let deployed = 0;
const healthEvents = async () => (await allHealthEvents()).slice(deployed);

test.serial('a pass records each deployed environment’s health; only a change emits its event', async (t) => {
  w.deployer.healthReads.length = 0;
  w.deployer.healthOf = 'degraded';
  t.is(await service.reconcileHealth(), 2, 'staging and review run a release; idle runs none');
  t.deepEqual(w.deployer.healthReads.sort(), ['review', 'staging']);
  t.like(await envOf('staging'), { health: 'degraded', health_detail: [{ service: 'web', health: 'degraded' }] });
  t.deepEqual((await healthEvents()).sort(), ['review healthy→degraded', 'staging healthy→degraded']);

  await service.reconcileHealth();
  t.is((await healthEvents()).length, 2, 'the same health again emits nothing');
  w.deployer.healthOf = 'healthy';
  await service.reconcileHealth();
  t.deepEqual((await healthEvents()).slice(2).sort(), ['review degraded→healthy', 'staging degraded→healthy']);
});

test.serial('a deployer that does not answer reads as unknown, with why; the pass goes on', async (t) => {
  w.deployer.healthFails = 'engine unreachable';
  try {
    t.is(await service.reconcileHealth(), 2);
  } finally {
    w.deployer.healthFails = null;
  }
  const staging = await envOf('staging');
  t.is(staging.health, 'unknown');
  t.regex(staging.health_detail[0].detail, /health could not be read: engine unreachable/);
  t.is((await envOf('review')).health, 'unknown');
  await service.reconcileHealth();
  t.is((await envOf('staging')).health, 'healthy');
});

test.serial('a suspended environment is not read', async (t) => {
  t.is((await w.owner.api.post(`/projects/${w.projectA}/environments/review/suspend`, { reason: 'quiet' })).statusCode, 200);
  const before = (await envOf('review')).health_checked_at;
  w.deployer.healthReads.length = 0;
  w.deployer.healthOf = 'degraded';
  t.is(await service.reconcileHealth(), 1);
  t.deepEqual(w.deployer.healthReads, ['staging']);
  t.like(await envOf('review'), { health: 'healthy', health_checked_at: before });
  w.deployer.healthOf = 'healthy';
  t.is((await w.owner.api.post(`/projects/${w.projectA}/environments/review/resume`, {})).statusCode, 200);
});

test('the loop passes every interval, survives a failing pass, and stops on shutdown', async (t) => {
  let passes = 0;
  const fake = {
    reconcileHealth: async () => {
      passes += 1;
      if (passes === 1) throw new Error('database went away');
      return 0;
    },
  } as unknown as EnvironmentService;
  const loop = new HealthReconciler(fake, 20, pino({ level: 'silent' }));
  await loop.start();
  for (const end = Date.now() + 10_000; passes < 3 && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
  t.true(passes >= 3, 'it went on after the failed pass');
  await loop.stop();
  const stoppedAt = passes;
  await new Promise((r) => setTimeout(r, 100));
  t.is(passes, stoppedAt, 'nothing runs after stop');
});
