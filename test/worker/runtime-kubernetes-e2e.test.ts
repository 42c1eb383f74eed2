/**
 * Jobs end to end through the REST API on the kubernetes runtime (`adapters.runtime: {use:
 * kubernetes}`), against the LOCAL FAKE API server in test/fixtures/fake-kube (not a cluster: it
 * speaks the Kubernetes REST protocol for the calls the runtime makes and runs each pod's command as
 * a local process). The fake's claim is the worker's workspace root, as a ReadWriteMany volume
 * shared by the worker and the pods would be.
 */
import { chmodSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { JobPhaseListeners } from '../../core/ports/jobs.ts';
import { FakeKube } from '../fixtures/fake-kube/server.ts';
import { attemptsOf, finished, logLines, until, workerWorld, type WorkerWorld } from './helpers.ts';

const FAKE_CLAUDE = fileURLToPath(new URL('../fixtures/bin/fake-claude', import.meta.url));
const OAUTH = 'sk-ant-oat-kube-e2e-not-shown';
for (const name of Object.keys(process.env)) if (/^ANTHROPIC_|^CLAUDE_CODE_/.test(name)) delete process.env[name];
process.env.CLAUDE_CODE_OAUTH_TOKEN = OAUTH;

const claims: Record<string, string> = {};
let fake: FakeKube;
let w: WorkerWorld;
const phases = new Map<string, string[]>();

test.before(async () => {
  fake = await new FakeKube({ claims }).start();
  w = await workerWorld('wkube', {
    overrides: {
      harnesses: { harness_b: { command: FAKE_CLAUDE } },
      // The worker (root here) hands each workspace to the pods' user, as docs/runtime-kubernetes.md asks.
      worker: { run_as_uid: 1000 },
      adapters: {
        runtime: {
          use: 'kubernetes',
          options: {
            server: fake.url,
            token: fake.token,
            insecure_skip_tls_verify: true,
            namespace: 'svc-jobs',
            image: 'svc-agent:e2e',
            workspace: { persistent_volume_claim: 'workspaces' },
            kill_grace_seconds: 1,
          },
        },
      },
    },
  });
  // The claim holds the worker's workspace root (worker.workspace_root, the default mount_path).
  claims.workspaces = path.join(w.scratch, 'workspaces');
  chmodSync(w.scratch, 0o755); // the workspace root must be reachable by that user
  w.srv.kernel.container.resolve(JobPhaseListeners).add(async (jobs) => {
    for (const j of jobs) phases.set(j.id, [...(phases.get(j.id) ?? []), j.phase]);
  });
});
test.after.always(async () => {
  await w?.stop();
  await fake?.stop();
});

const podOf = (jobId: string) => fake.createdPods().find((p) => p.metadata.labels['svc/job-id'] === jobId);

test.serial('a script step runs in a pod: ready → active → done, its log and receipt recorded, pod and secret deleted', async (t) => {
  const run =
    'echo "job $SVC_JOB_ID in $(pwd)"; test -f .svc/resources/index.json && echo index-present; echo oops >&2; sleep 0.5; echo written > out.txt && echo done';
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'kube script',
    hints: { step: { kind: 'script', script: { run } }, resource_class: 'job.c2', timeout_seconds: 120 },
  });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  t.is(created.body.phase, 'ready');
  const job = await finished(w, created.body.id, 60_000);
  t.is(
    job.phase,
    'done',
    JSON.stringify({ attempts: await attemptsOf(w, job.id), log: (await logLines(w, job.id, (await attemptsOf(w, job.id))[0].id)).map((l) => l.line) }),
  );
  t.deepEqual(
    phases.get(job.id)?.filter((p, i, all) => p !== all[i - 1]),
    ['active', 'done'],
  );

  const [attempt] = await attemptsOf(w, job.id);
  t.like(attempt, { status: 'succeeded', result_summary: 'exit code 0' });
  const lines = await logLines(w, job.id, attempt.id);
  const out = lines.filter((l) => l.stream === 'stdout').map((l) => l.line);
  t.is(out.length, 4);
  t.regex(out[0], new RegExp(`^job ${job.id} in ${w.scratch}/workspaces/`));
  t.deepEqual(out.slice(1), ['index-present', 'oops', 'done']);
  const receipt = await w.api.get(`/jobs/${job.id}/receipt`);
  t.is(receipt.statusCode, 200);
  t.true('execute' in receipt.body.timing.phases);

  const pod = podOf(job.id);
  t.truthy(pod, 'the attempt ran as a pod');
  t.like(pod.spec, {
    restartPolicy: 'Never',
    activeDeadlineSeconds: 120 + 300 + 1,
    securityContext: { runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true },
  });
  // The worker removes the workspace once it has reported the attempt, so just after the job is done.
  const workspace = path.join(w.scratch, 'workspaces', path.basename(pod.spec.containers[0].workingDir));
  await until(async () => !existsSync(workspace), 'the workspace is removed afterwards', 5_000);
  t.deepEqual(pod.spec.containers[0].resources, { requests: { cpu: '2', memory: '4Gi' }, limits: { cpu: '4', memory: '8Gi' } });
  t.is(pod.metadata.labels['svc/attempt-id'], attempt.id);
  const secret = fake.createdSecrets().find((s) => s.metadata.name === `${pod.metadata.name}-env`);
  t.is(Buffer.from(secret.data.SVC_JOB_ID, 'base64').toString(), job.id);
  t.truthy(secret.data.SVC_JOB_TOKEN);
  t.true(fake.deleted('pods', pod.metadata.name));
  t.true(fake.deleted('secrets', secret.metadata.name));
});

test.serial('a harness_b job runs the fake Claude Code CLI in a pod, with its credential through the Secret', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'Fix the failing test', harness: 'harness_b' });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const job = await finished(w, created.body.id, 60_000);
  t.is(job.phase, 'done', JSON.stringify(await attemptsOf(w, created.body.id)));
  t.deepEqual(
    phases.get(job.id)?.filter((p, i, all) => p !== all[i - 1]),
    ['active', 'done'],
  );
  const [attempt] = await attemptsOf(w, job.id);
  t.like(attempt, { status: 'succeeded', result_summary: 'Handled: Fix the failing test' });

  const lines = await logLines(w, job.id, attempt.id);
  t.true(lines.some((l) => l.stream === 'system' && l.line === `started harness_b (${FAKE_CLAUDE})`));
  t.true(
    lines.some((l) => l.stream === 'stdout' && l.line.includes('[tool] Bash')),
    JSON.stringify(lines.map((l) => l.line)),
  );
  t.false(
    lines.some((l) => l.line.includes(OAUTH)),
    'the credential is masked in the log',
  );
  const receipt = await w.api.get(`/jobs/${job.id}/receipt`);
  t.is(receipt.statusCode, 200);
  t.true(receipt.body.llm.input_tokens > 0);

  const pod = podOf(job.id);
  t.is(pod.spec.containers[0].command[0], FAKE_CLAUDE);
  t.true(pod.spec.containers[0].args.includes('stream-json'));
  t.false(JSON.stringify(pod).includes(OAUTH), 'the credential is not in the pod spec');
  const secret = fake.createdSecrets().find((s) => s.metadata.name === `${pod.metadata.name}-env`);
  t.is(Buffer.from(secret.data.CLAUDE_CODE_OAUTH_TOKEN, 'base64').toString(), OAUTH);
  t.is(fake.pods.size, 0);
  t.is(fake.secrets.size, 0);
});

test.serial('a pod that cannot start fails the attempt saying why', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'too big',
    hints: { step: { kind: 'script', script: { run: 'true' } }, resource_class: 'job.huge' },
  });
  const job = await finished(w, created.body.id, 60_000);
  const [attempt] = await attemptsOf(w, job.id);
  t.like(attempt, { status: 'failed' });
  t.is(
    attempt.error,
    "could not start /bin/sh on the kubernetes runtime: resource class 'job.huge' is not configured (adapters.runtime.options.resource_classes has job.c1, job.c2)",
  );
});
