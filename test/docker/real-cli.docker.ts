/**
 * A real coding CLI through svc on the docker runtime (npm run test:docker): harness_b's job runs the
 * real Claude Code of the worker image with the CLIs (examples/docker/worker-clis-image.sh; images.ts
 * builds it) in a container, as uid 1000, on the host's network (the engine here has no bridge, and
 * the scripted Anthropic server of the real-CLI suite listens on loopback). This server has no
 * `claude` on its PATH: the CLI is the image's. Beside it, what the image holds: the four CLIs at the
 * pinned versions, and bubblewrap, which cannot make its namespaces in a container as the runtime
 * makes it and can when the engine allows them.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { git } from '../worker/helpers.ts';
import { AnthropicServer, resultText, toolNamed, type Turn } from '../clis/support/anthropic-server.ts';
import { PINNED } from '../clis/support/clis.ts';
import { createJob, ended, jobWorld, usageByModel, type JobWorld } from '../clis/support/harness-jobs.ts';
import { CLIS_IMAGE, containerActions, containersLabelled, docker } from './helpers.ts';

const MODEL = 'claude-docker-1';
const API_KEY = 'sk-ant-docker-clis-0123456789';

// Only the shared secret below may reach the CLI; and no `claude` of this machine's may be found.
for (const name of Object.keys(process.env)) if (/_API_KEY$|^CLAUDE_CODE_|^ANTHROPIC_/.test(name)) delete process.env[name];
process.env.PATH = (process.env.PATH ?? '')
  .split(path.delimiter)
  .filter((dir) => dir && !existsSync(path.join(dir, 'claude')))
  .join(path.delimiter);

let w: JobWorld;
let llm: AnthropicServer;

test.before(async () => {
  llm = await new AnthropicServer().start();
  w = await jobWorld(
    'dclis',
    { harness_b: { command: 'claude' } },
    { ANTHROPIC_API_KEY: API_KEY },
    { adapters: { runtime: { use: 'docker', options: { image: CLIS_IMAGE, network: 'host', kill_grace_ms: 1000 } } } },
  );
});
test.after.always(async () => {
  await w?.stop();
  await llm?.stop();
});

/** The workspace the CLI runs in, from the request (its system prompt and environment name it). */
function workspaceIn(body: unknown): string {
  const found = new RegExp(`${w.workspaceRoot.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/[^\\s"\\\\]+`).exec(JSON.stringify(body));
  if (!found) throw new Error('the request does not name the workspace');
  return found[0];
}

/** Whether hello.txt was in the workspace (seen from the host) when the model was asked for turn 2. */
let writtenAtTurn2: boolean | null = null;

const WRITE_SCRIPT: Turn[] = [
  (body) => [
    { type: 'text', text: 'I will write the file.' },
    {
      type: 'tool_use',
      name: toolNamed(body, 'Write'),
      input: { file_path: path.join(workspaceIn(body), 'hello.txt'), content: 'hello from the container\n' },
    },
  ],
  (body) => {
    writtenAtTurn2 = existsSync(path.join(workspaceIn(body), 'hello.txt'));
    return [{ type: 'text', text: resultText('wrote hello.txt') }];
  },
];

test.serial(
  'harness_b: Claude Code from the image writes the file with its Write tool in the container; json-result read; exactly that change committed; receipt equals the reported usage',
  async (t) => {
    const since = new Date(Date.now() - 1000);
    // This machine has no claude on PATH; the worker's runtime runs the image's.
    const auth = (await w.api.get('/harnesses/harness_b')).body.auth;
    t.like(auth, {
      available: true,
      reason: `'claude' runs in the image ${CLIS_IMAGE} (not looked for here); credentials from secrets and the environment (ANTHROPIC_API_KEY)`,
    });
    llm.use(WRITE_SCRIPT);
    const started = Date.now();
    const job = await createJob(w, { description: 'Write hello.txt', harness: 'harness_b', model: MODEL, env_overrides: { ANTHROPIC_BASE_URL: llm.url } });
    const r = await ended(w, job);
    t.log(`job done in ${Math.round((Date.now() - started) / 1000)} s`);
    t.is(r.job.phase, 'done', `${JSON.stringify(r.attempt)}\n${r.logs}`);
    t.like(r.attempt, { status: 'succeeded', result_summary: 'wrote hello.txt' });
    t.is(writtenAtTurn2, true, 'the file was in the mounted workspace once the tool ran');
    t.deepEqual(r.committed, ['hello.txt'], 'the commit holds the agent change and nothing under .svc/');
    t.is(git(w.bare, 'show', `${r.branch}:hello.txt`), 'hello from the container');
    t.regex(r.logs, /^started harness_b \(claude\)$/m);
    t.regex(r.logs, /^\[tool\] Write$/m);

    const requests = llm.requests;
    const scripted = requests.filter((q) => q.scripted);
    t.is(scripted.length, 2, 'both turns of the script were asked for');
    for (const q of scripted) {
      t.is(q.body.model, MODEL);
      t.is(q.headers['x-api-key'], API_KEY, 'the key from the shared system secret');
      t.true(String(q.headers['user-agent']).startsWith(`claude-cli/${PINNED.claude.version} `), String(q.headers['user-agent']));
    }
    // The receipt holds exactly the usage the scripted server reported, per model and in total.
    const reported = usageByModel(
      requests
        .filter((q) => q.usage)
        .map((q) => ({
          model: String(q.body.model),
          input: q.usage!.input_tokens,
          output: q.usage!.output_tokens,
          cacheRead: q.usage!.cache_read_input_tokens,
          cacheWrite: q.usage!.cache_creation_input_tokens,
        })),
    );
    t.deepEqual(Object.keys(r.receipt.llm.models).sort(), Object.keys(reported).sort(), JSON.stringify(r.receipt.llm));
    for (const [model, tokens] of Object.entries(reported)) t.like(r.receipt.llm.models[model], tokens, model);
    const sum = (k: keyof (typeof reported)[string]) => Object.values(reported).reduce((n, u) => n + u[k], 0);
    t.like(r.receipt.llm, {
      input_tokens: sum('input_tokens'),
      output_tokens: sum('output_tokens'),
      cache_read_tokens: sum('cache_read_tokens'),
      cache_write_tokens: sum('cache_write_tokens'),
    });
    t.false(r.logs.includes(API_KEY), 'the key never reaches the log');

    // It ran in one container of the CLI image, which is gone.
    t.deepEqual(await containersLabelled(`svc.job_id=${job.id}`), []);
    const actions = await containerActions(`svc.job_id=${job.id}`, since);
    t.deepEqual(
      actions.filter((a) => ['create', 'start', 'die', 'destroy'].includes(a)),
      ['create', 'start', 'die', 'destroy'],
    );
  },
);

test.serial('a job in the image finds the four CLIs at the pinned versions, git, and bubblewrap, which gets no namespaces there', async (t) => {
  const probe = [
    'for c in claude codex gemini opencode; do echo "$c: $($c --version 2>&1 | tail -n 1)"; done',
    'git --version',
    'bwrap --version',
    'bwrap --ro-bind / / --dev /dev --unshare-pid --die-with-parent true 2>&1; echo "bwrap exit $?"',
  ].join('; ');
  const job = await createJob(w, { description: 'probe the image', hints: { step: { kind: 'script', script: { run: probe } } } });
  const r = await ended(w, job);
  t.is(r.job.phase, 'done', r.logs);
  const v = (name: keyof typeof PINNED) => PINNED[name].version.replace(/\./g, '\\.');
  t.regex(r.logs, new RegExp(`^claude: ${v('claude')} \\(Claude Code\\)$`, 'm'));
  t.regex(r.logs, new RegExp(`^codex: codex-cli ${v('codex')}$`, 'm'));
  t.regex(r.logs, new RegExp(`^gemini: ${v('gemini')}$`, 'm'));
  t.regex(r.logs, new RegExp(`^opencode: ${v('opencode')}$`, 'm'));
  t.regex(r.logs, /^git version /m);
  t.regex(r.logs, /^bubblewrap \d/m);
  // All capabilities dropped and Docker's default seccomp profile: no namespaces for bubblewrap.
  t.regex(r.logs, /^bwrap: No permissions to create new namespace/m);
  t.regex(r.logs, /^bwrap exit 1$/m);
});

test.serial('bubblewrap in the image sandboxes a command when the engine allows namespaces (seccomp unconfined, /proc unmasked)', async (t) => {
  const container = await docker.createContainer({
    Image: CLIS_IMAGE,
    User: '1000:1000',
    Cmd: [
      'bwrap',
      ...['--unshare-user', '--unshare-pid', '--unshare-net', '--die-with-parent'],
      ...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'],
      ...['sh', '-c', 'echo "inside as $(id -u), pid $$, $(ls /proc | grep -c "^[0-9]") processes seen"'],
    ],
    Labels: { 'svc.test': 'real-cli-bwrap' },
    HostConfig: {
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges', 'seccomp=unconfined'],
      // `--security-opt systempaths=unconfined`: a fresh /proc may only be mounted where none is masked.
      MaskedPaths: [],
      ReadonlyPaths: [],
    },
  });
  try {
    await container.start();
    const { StatusCode } = await container.wait();
    const output = (await container.logs({ stdout: true, stderr: true })).toString('utf8');
    t.is(StatusCode, 0, output);
    // Its own PID namespace: bubblewrap's init is 1, the shell 2, and only a handful more (its subshells) are seen.
    const seen = /inside as 1000, pid 2, (\d+) processes seen/.exec(output);
    t.truthy(seen, output);
    t.true(Number(seen?.[1]) < 10, output);
  } finally {
    await container.remove({ force: true });
  }
});
