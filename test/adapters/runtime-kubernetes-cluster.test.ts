/**
 * The kubernetes runtime against a REAL cluster, run only when SVC_KUBE_TEST_KUBECONFIG and
 * SVC_KUBE_TEST_WORKSPACE are set (docs/runtime-kubernetes.md, "Running against a real cluster");
 * otherwise every test here is reported as skipped. SVC_KUBE_TEST_WORKSPACE is a directory of this
 * machine that the cluster's node sees at the same path (kind: extraMounts), used as a hostPath.
 */
import test from 'ava';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import runtimeAdapter from '../../adapters/runtime/kubernetes/index.ts';
import type { AdapterDeps } from '../../core/adapters.ts';
import type { OutputLine, Runtime } from '../../core/ports/runtime.ts';

const kubeconfig = process.env.SVC_KUBE_TEST_KUBECONFIG;
const workspace = process.env.SVC_KUBE_TEST_WORKSPACE;
const cluster = kubeconfig && workspace ? test.serial : test.skip;

let runtime: Runtime;
let dir = '';
test.before(async () => {
  if (!kubeconfig || !workspace) return;
  const { value, error } = runtimeAdapter.options.validate({
    kubeconfig,
    image: process.env.SVC_KUBE_TEST_IMAGE ?? 'busybox:1.36',
    namespace: process.env.SVC_KUBE_TEST_NAMESPACE ?? 'default',
    workspace: { host_path: workspace, mount_path: workspace },
    kill_grace_seconds: 2,
    resource_classes: { 'job.c1': { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '64Mi' } } },
  });
  if (error) throw error;
  runtime = await runtimeAdapter.create(value, { logger: pino({ level: 'silent' }) } as unknown as AdapterDeps);
  dir = await mkdtemp(path.join(workspace, 'kube-test-'));
  await chmod(dir, 0o777);
});
test.after.always(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The user the worker names by default (worker.run_as_uid 1000). */
const user = { uid: 1000, gid: 1000 };

async function collect(lines: AsyncIterable<OutputLine>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of lines) out.push(l.line);
  return out;
}

cluster("a pod runs the command in the shared workspace with the Secret's environment", async (t) => {
  const proc = await runtime.start({
    command: 'sh',
    args: ['-c', 'echo "$GREETING"; cat hello.txt; id -u; exit 4'],
    env: { GREETING: 'hi' },
    cwd: dir,
    user,
    files: { 'hello.txt': 'from the worker\n' },
  });
  t.deepEqual(await collect(proc.lines()), ['hi', 'from the worker', '1000']);
  t.deepEqual(await proc.exited, { exitCode: 4, signal: null, timedOut: false });
});

cluster('a timeout deletes the pod', async (t) => {
  const proc = await runtime.start({ command: 'sh', args: ['-c', 'echo up; sleep 300'], env: {}, cwd: dir, user, timeoutMs: 5000 });
  t.deepEqual(await collect(proc.lines()), ['up']);
  t.true((await proc.exited).timedOut);
});
