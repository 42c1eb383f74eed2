/**
 * Flow 1 of docs/environments.md on the Kubernetes deployer (fake API server): a signed push to
 * main triggers the ship pipeline — build (a scripted builder: no engine here), release, deploy
 * staging — and staging runs the new digests, healthy from its rollout; the system.deploy.* events
 * reach a webhook subscription.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { FakeKube } from '../fixtures/fake-kube/server.ts';
import { push } from '../fixtures/vcshost/deliveries.ts';
import { buildWorld, twoServiceRepo, type BuildWorld } from '../builds/helpers.ts';
import { deliver, hubSignature } from '../integrations/helpers.ts';
import { receiver, type Receiver } from '../webhooks/helpers.ts';
import { until } from '../worker/helpers.ts';

const MANIFEST = `
registry: none
services:
  web:
    image: example/web
    build: { context: web }
    command: [/bin/sh, -c, 'printf ok > page; exec sleep 600']
    ports: [8080]
    healthcheck:
      command: test -s page
      interval_seconds: 1
      timeout_seconds: 2
      retries: 2
environments:
  staging:
    type: persistent
    kind: staging
pipelines:
  ship:
    trigger: { vcshost: { event: push, branch: main } }
    steps:
      - { name: build, action: { type: build } }
      - { name: release, action: { type: release }, depends_on: [build] }
      - { name: deploy, action: { type: deploy, with: { env_name: staging } }, depends_on: [release] }
`;

const kube = new FakeKube({ stepMs: 20 });
const scratch = mkdtempSync(path.join(tmpdir(), 'svc-kpush-'));
let w: BuildWorld;
let hook: Receiver;
let projectId: string;
let repo: ReturnType<typeof twoServiceRepo>;

test.before(async () => {
  await kube.start();
  hook = await receiver();
  w = await buildWorld({
    overrides: {
      roles: ['api', 'orchestrator', 'worker'],
      worker: { heartbeat_seconds: 1, log_flush_ms: 20, workspace_root: path.join(scratch, 'workspaces') },
      webhooks: { retry_delays_ms: [150, 300, 450, 600, 750], poll_ms: 100, timeout_ms: 2_000 },
      adapters: {
        scheduler: { use: 'agenda', options: { process_every_ms: 50 } },
        deployer: {
          use: 'kubernetes',
          options: { server: kube.url, token: kube.token, insecure_skip_tls_verify: true, progress_deadline_seconds: 5, rollout_timeout_ms: 60_000 },
        },
      },
    },
  });
  repo = twoServiceRepo(MANIFEST);
  projectId = await w.project(repo.url);
  const synced = await w.admin.post(`/projects/${projectId}/manifest`, { ref: repo.sha });
  if (synced.statusCode !== 200) throw new Error(`manifest: ${JSON.stringify(synced.body)}`);
  const secret = await w.admin.post(`/projects/${projectId}/secrets`, { name: 'VCSHOST_WEBHOOK_SECRET', value: 'push-hook-secret' });
  if (secret.statusCode !== 201) throw new Error(`secret: ${JSON.stringify(secret.body)}`);
  const sub = await w.admin.post(`/projects/${projectId}/webhooks`, { url: hook.url, secret: 'a-subscription-secret-0123456789', events: ['*'] });
  if (sub.statusCode !== 201) throw new Error(`subscribe: ${JSON.stringify(sub.body)}`);
});
test.after.always(async () => {
  await w?.s.stop();
  await hook?.close();
  await kube.stop();
  rmSync(scratch, { recursive: true, force: true });
});

test.serial(
  'flow 1 on the cluster: push to main → build → release → deploy staging, running the new digests; the deploy events reach the webhook',
  async (t) => {
    const raw = JSON.stringify(push('refs/heads/main', repo.sha));
    const stored = await deliver(w.s.server, `/integrations/vcshost/events/${projectId}`, raw, {
      'x-github-event': 'push',
      'x-github-delivery': 'kpush-1',
      'x-hub-signature-256': hubSignature('push-hook-secret', raw),
    });
    t.is(stored.statusCode, 201, JSON.stringify(stored.body));
    const event = await until(async () => {
      const e = (await w.admin.get(`/projects/${projectId}/events/${stored.body.id}`)).body;
      return ['completed', 'failed'].includes(e.status) ? e : null;
    }, 'the push to be routed');
    t.deepEqual(
      event.routing.matched.map((m: any) => `${m.kind} ${m.name}`),
      ['pipeline ship'],
      JSON.stringify(event),
    );
    const runId = event.routing.matched[0].run_id;
    const run = await until(
      async () => {
        const r = (await w.admin.get(`/projects/${projectId}/runs/${runId}`)).body;
        return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : null;
      },
      'the ship run to end',
      90_000,
    );
    t.is(run.status, 'succeeded', JSON.stringify(run));
    const [release] = (await w.admin.get(`/projects/${projectId}/releases`)).body.data;
    t.like(release, { git_sha: repo.sha });
    const env = (await w.admin.get(`/projects/${projectId}/environments/staging`)).body;
    t.like(env, { health: 'healthy', current_release: { id: release.id, git_sha: repo.sha, image_digests: release.image_digests } });

    const slug = (await w.admin.get(`/projects/${projectId}`)).body.slug;
    const d = kube.apps.deployments.get(`svc-${slug}-staging/web`)!.obj;
    t.is(d.spec.template.spec.containers[0].image, `example/web@${release.image_digests.web}`);
    t.like(d.status, { availableReplicas: 1, updatedReplicas: 1 });

    const received = await until(
      async () => {
        const types = hook.received.map((r) => JSON.parse(r.body).type);
        return types.includes('system.deploy.succeeded') ? types : null;
      },
      'the deploy events at the webhook',
      30_000,
    );
    t.deepEqual(
      received.filter((x: string) => x.startsWith('system.deploy.')),
      ['system.deploy.started', 'system.deploy.succeeded'],
    );
    const succeeded = JSON.parse(hook.received.find((r) => JSON.parse(r.body).type === 'system.deploy.succeeded')!.body);
    t.like(succeeded.data, { env_name: 'staging', release_id: release.id, git_sha: repo.sha });
  },
);
