/** `svc pipeline run | runs | logs | approve | cancel` (node dist/cli/bin.js) against a stand-in API that also speaks text/event-stream. */
import test from 'ava';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { BIN, page, runCli, tempHome } from './helpers.ts';
import { askInputs } from '../../cli/commands/pipeline-inputs.ts';
import { createPrompter } from '../../cli/prompt.ts';
import { CliError } from '../../cli/errors.ts';

const STEPS = [
  { name: 'build', job_id: 'web-00000001', execution_type: 'script', depends_on: [], approval: false, status: 'succeeded' },
  { name: 'deploy', job_id: 'web-00000002', execution_type: 'action', depends_on: ['build'], approval: true, status: 'awaiting_approval' },
];
const RUN = {
  id: 'prun_1',
  project_id: 'proj_1',
  pipeline_name: 'release',
  status: 'awaiting_approval',
  ref: 'main',
  git_sha: null,
  env_name: 'staging',
  inputs: { tag: 'v1' },
  only_steps: null,
  manifest_hash: 'sha256:x',
  error_message: null,
  cancel_reason: null,
  created_by: 'usr_1',
  created_at: '2025-01-01T00:00:00.000Z',
  started_at: '2025-01-01T00:00:01.000Z',
  completed_at: null,
  updated_at: 'u',
  steps: STEPS,
};
const TAGGED = {
  name: 'tagged',
  steps: [{ name: 'tag', script: { run: 'git tag v${inputs.version}' }, depends_on: [] }],
  inputs: { version: { required: true, description: 'the version to tag' }, channel: { default: 'stable' } },
};
const ENDED = { ...RUN, id: 'prun_2', status: 'failed', error_message: 'step deploy failed', steps: [STEPS[0], { ...STEPS[1], status: 'failed' }] };

const ev = (id: number, event: string, data: object) => `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const EVENTS = [
  ev(1, 'run.status', { run_id: 'prun_2', status: 'running', error_message: null }),
  ev(2, 'step.status', { step_name: 'build', status: 'running' }),
  ev(3, 'step.log', { step_name: 'build', line: 'compiling…' }),
  ev(4, 'step.status', { step_name: 'build', status: 'succeeded' }),
  ev(5, 'step.status', { step_name: 'deploy', status: 'failed' }),
  ev(6, 'run.status', { run_id: 'prun_2', status: 'failed', error_message: 'step deploy failed' }),
];
const LINES = ['run running', '[build] running', '[build] compiling…', '[build] succeeded', '[deploy] failed', 'run failed: step deploy failed'];

interface Seen {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  lastEventId?: string;
}
const seen: Seen[] = [];
let streamed = 0;

/** JSON routes by "METHOD /path"; streams send EVENTS after Last-Event-ID, the first one breaking off after event 3. */
const json: Record<string, (s: Seen) => [number, unknown]> = {
  'POST /projects/proj_1/pipelines/release/run': (s) => [201, { ...RUN, status: 'pending', ...(s.body as object) }],
  'POST /projects/proj_1/pipelines/nope/run': () => [404, { statusCode: 404, error: 'Not Found', message: 'pipeline nope not found in the manifest' }],
  'POST /projects/proj_1/pipelines/fails/run': () => [201, { ...ENDED, status: 'pending' }],
  'GET /projects/proj_1/pipelines/release/runs': () => [200, page([RUN, ENDED], { total: 2 })],
  'GET /projects/proj_1/runs/prun_1': () => [200, RUN],
  'GET /projects/proj_1/runs/prun_2': () => [200, ENDED],
  'POST /pipeline-runs/prun_1/approve': () => [200, { ...RUN, status: 'running' }],
  'POST /pipeline-runs/prun_1/cancel': (s) => [200, { ...RUN, status: 'cancelled', cancel_reason: (s.body as { reason?: string }).reason ?? null }],
  // A pipeline that declares a required input with no default: the server refuses a run without it.
  'POST /projects/proj_1/pipelines/tagged/run': (s) =>
    (s.body as { inputs?: { version?: string } }).inputs?.version
      ? [201, { ...RUN, status: 'pending', ...(s.body as object) }]
      : [422, { statusCode: 422, error: 'Unprocessable Entity', message: 'required input version was not given', missing_inputs: ['version'] }],
  'GET /projects/proj_1/pipelines/tagged': () => [200, TAGGED],
  'GET /pipeline-runs/prun_9/stream': () => [404, { statusCode: 404, error: 'Not Found', message: 'pipeline run prun_9 not found' }],
};

function stream(req: IncomingMessage, res: ServerResponse, s: Seen) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const after = Number(s.lastEventId ?? 0);
  const step = /\/steps\/([^/]+)\/stream$/.exec(s.path)?.[1];
  const events = EVENTS.filter((e, i) => i + 1 > after && (!step || e.includes(`"step_name":"${step}"`)));
  if (streamed++ === 0 && !step) {
    res.write(`: hello\n\n${events.slice(0, 3).join('')}id: 4\nevent: step.status\ndata: {"step_na`);
    setTimeout(() => res.destroy(), 30);
  } else res.end(events.join(''));
}

let server: Server;
let url = '';
let home = '';

test.before(async () => {
  home = await tempHome();
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const u = new URL(req.url ?? '/', 'http://x');
    const s: Seen = {
      method: req.method ?? 'GET',
      path: u.pathname,
      query: Object.fromEntries(u.searchParams),
      body: chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined,
      lastEventId: req.headers['last-event-id'] as string | undefined,
    };
    seen.push(s);
    const route = json[`${s.method} ${s.path}`];
    if (route) {
      const [status, body] = route(s);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    } else if (s.path.endsWith('/stream')) stream(req, res, s);
    else res.writeHead(404, { 'content-type': 'application/json' }).end('{"statusCode":404,"error":"Not Found","message":"Not Found"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
test.after.always(() => {
  server?.closeAllConnections();
  server?.close();
});

async function svc(args: string[]) {
  const before = seen.length;
  const r = await runCli(home, args, { SVC_API_URL: url, SVC_TOKEN: 'tok' });
  return { ...r, requests: seen.slice(before) };
}

test.serial('usage and argument errors exit 2 before any request', async (t) => {
  const help = await svc(['pipeline', '--help']);
  t.is(help.code, 0);
  for (const line of [
    'run NAME [--ref REF]',
    'runs NAME [--status S]',
    'logs RUN_ID [--step NAME] [-f|--follow]',
    'approve RUN_ID',
    'cancel RUN_ID',
    'exit 1 when the run',
  ]) {
    t.true(help.stdout.includes(line), line);
  }
  const cases: [string[], string | RegExp][] = [
    [['pipeline', 'run', '--project', 'proj_1'], 'svc: missing argument'],
    [['pipeline', 'run', 'release'], "svc: --project is required (or set the profile's project: `svc config set project ID`)"],
    [['pipeline', 'run', 'release', '--project', 'proj_1', '--only', 'build,,test'], 'svc: --only takes step names separated by commas, got "build,,test"'],
    [['pipeline', 'run', 'release', '--project', 'proj_1', '--inputs', '[1]'], 'svc: --inputs must be a JSON object'],
    [['pipeline', 'run', 'release', '--project', 'proj_1', '--inputs', '{x'], /^svc: --inputs must be JSON: /],
    [['pipeline', 'runs', 'release', '--project', 'proj_1', '--limit', 'ten'], 'svc: --limit must be a non-negative integer, got "ten"'],
    [['pipeline', 'logs', 'prun_1', '--tail'], "svc: Unknown option '--tail'"],
    [['pipeline', 'approve'], 'svc: missing argument'],
    [['pipeline', 'cancel', 'prun_1', '--comment', 'x'], "svc: Unknown option '--comment'"],
  ];
  for (const [args, message] of cases) {
    const r = await svc(args);
    t.is(r.code, 2, args.join(' '));
    const first = r.stderr.split('\n')[0];
    if (typeof message === 'string') t.is(first, message);
    else t.regex(first, message);
    t.true(r.stderr.endsWith("\nsvc: see 'svc pipeline --help'\n"), r.stderr);
    t.deepEqual(r.requests, []);
  }
});

test.serial('run sends ref, env, inputs and only_steps, and prints the run with its steps', async (t) => {
  const r = await svc([
    'pipeline',
    'run',
    'release',
    '--project',
    'proj_1',
    '--ref',
    'v1.2',
    '--env',
    'staging',
    '--inputs',
    '{"tag":"v1"}',
    '--only',
    'build, deploy',
  ]);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(
    r.requests.map((q) => [q.method, q.path, q.body]),
    [['POST', '/projects/proj_1/pipelines/release/run', { ref: 'v1.2', env: 'staging', inputs: { tag: 'v1' }, only_steps: ['build', 'deploy'] }]],
  );
  t.regex(r.stdout, /^id: +prun_1$/m);
  t.regex(r.stdout, /^status: +pending$/m);
  t.regex(r.stdout, /^inputs: +\{"tag":"v1"\}$/m);
  t.true(
    r.stdout.endsWith(
      [
        'steps:',
        '  STEP    STATUS             JOB           AFTER',
        '  build   succeeded          web-00000001  -',
        '  deploy  awaiting_approval  web-00000002  build, (approval)',
        '',
      ].join('\n'),
    ),
    r.stdout,
  );

  const bare = await svc(['pipeline', 'run', 'release', '--project', 'proj_1', '--json']);
  t.deepEqual(bare.requests[0].body, {});
  t.is(JSON.parse(bare.stdout).id, 'prun_1');

  const missing = await svc(['pipeline', 'run', 'nope', '--project', 'proj_1']);
  t.is(missing.code, 1);
  t.is(missing.stderr, 'svc: pipeline nope not found in the manifest (404)\n');
});

test.serial('runs lists with the filters; approve and cancel send their body', async (t) => {
  const runs = await svc(['pipeline', 'runs', 'release', '--project', 'proj_1', '--status', 'failed', '--limit', '5', '--offset', '0']);
  t.is(runs.code, 0, runs.stderr);
  t.deepEqual(runs.requests[0].query, { status: 'failed', limit: '5', offset: '0' });
  t.is(
    runs.stdout,
    [
      'ID      STATUS             REF   ENV      CREATED                   COMPLETED',
      'prun_1  awaiting_approval  main  staging  2025-01-01T00:00:00.000Z  -',
      'prun_2  failed             main  staging  2025-01-01T00:00:00.000Z  -',
      '',
    ].join('\n'),
  );

  const approved = await svc(['pipeline', 'approve', 'prun_1', '--comment', 'ship it']);
  t.is(approved.code, 0, approved.stderr);
  t.deepEqual(
    approved.requests.map((q) => [q.method, q.path, q.body]),
    [['POST', '/pipeline-runs/prun_1/approve', { comment: 'ship it' }]],
  );
  t.regex(approved.stdout, /^status: +running$/m);

  const cancelled = await svc(['pipeline', 'cancel', 'prun_1', '--reason', 'bad tag', '--json']);
  t.deepEqual(cancelled.requests[0].body, { reason: 'bad tag' });
  t.like(JSON.parse(cancelled.stdout), { status: 'cancelled', cancel_reason: 'bad tag' });
  t.deepEqual((await svc(['pipeline', 'cancel', 'prun_1'])).requests[0].body, {});
});

test.serial('logs -f prints each event once across a dropped connection (resumed with Last-Event-ID) and exits 1 for a failed run', async (t) => {
  streamed = 0;
  const r = await svc(['pipeline', 'logs', 'prun_2', '-f']);
  t.is(r.code, 1, r.stderr);
  t.is(r.stdout, `${LINES.join('\n')}\n`);
  t.deepEqual(
    r.requests.map((q) => [q.path, q.lastEventId]),
    [
      ['/pipeline-runs/prun_2/stream', undefined],
      ['/pipeline-runs/prun_2/stream', '3'],
    ],
  );
  t.regex(r.stderr, /^svc: the stream ended early; reconnecting \(try 1\)\n$|^svc: the connection broke: .*; reconnecting \(try 1\)\n$/);

  const raw = await svc(['pipeline', 'logs', 'prun_2', '--follow', '--json']);
  t.is(raw.code, 1);
  const objects = raw.stdout
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));
  t.deepEqual(objects[0], { id: '1', event: 'run.status', data: { run_id: 'prun_2', status: 'running', error_message: null } });
  t.deepEqual(
    objects.map((o) => o.id),
    ['1', '2', '3', '4', '5', '6'],
  );

  const step = await svc(['pipeline', 'logs', 'prun_2', '-f', '--step', 'build']);
  t.is(step.code, 0, step.stderr);
  t.is(step.stdout, '[build] running\n[build] compiling…\n[build] succeeded\n');
  t.is(step.requests[0].path, '/pipeline-runs/prun_2/steps/build/stream');

  const missing = await svc(['pipeline', 'logs', 'prun_9', '-f']);
  t.is(missing.code, 1);
  t.is(missing.stderr, 'svc: pipeline run prun_9 not found (404)\n');
});

test.serial('logs without -f: an ended run prints its events; a run still going prints its steps instead', async (t) => {
  streamed = 1;
  const ended = await svc(['pipeline', 'logs', 'prun_2', '--project', 'proj_1']);
  t.is(ended.code, 0, ended.stderr);
  t.is(ended.stdout, `${LINES.join('\n')}\n`);
  t.deepEqual(
    ended.requests.map((q) => q.path),
    ['/projects/proj_1/runs/prun_2', '/pipeline-runs/prun_2/stream'],
  );

  const going = await svc(['pipeline', 'logs', 'prun_1', '--project', 'proj_1']);
  t.is(going.code, 0, going.stderr);
  t.deepEqual(
    going.requests.map((q) => q.path),
    ['/projects/proj_1/runs/prun_1'],
  );
  t.regex(going.stdout, /^status: +awaiting_approval$/m);
  t.regex(going.stdout, /^ {2}deploy +awaiting_approval +web-00000002/m);
  t.is(going.stderr, 'svc: run prun_1 is awaiting_approval; `svc pipeline logs prun_1 -f` follows its events\n');

  const step = await svc(['pipeline', 'logs', 'prun_1', '--project', 'proj_1', '--step', 'build']);
  t.is(step.stdout, '[build] running\n[build] compiling…\n[build] succeeded\n');
  const unknown = await svc(['pipeline', 'logs', 'prun_1', '--project', 'proj_1', '--step', 'lint']);
  t.is(unknown.code, 2);
  t.is(unknown.stderr.split('\n')[0], 'svc: run prun_1 has no step "lint" (steps: build, deploy)');
});

test.serial('run --wait follows the new run to its end; with --json it prints the final run', async (t) => {
  streamed = 1;
  const r = await svc(['pipeline', 'run', 'fails', '--project', 'proj_1', '--wait']);
  t.is(r.code, 1, r.stderr);
  t.regex(r.stdout, /^id: +prun_2\n/);
  t.true(r.stdout.endsWith(`${LINES.join('\n')}\n`), r.stdout);

  const quiet = await svc(['pipeline', 'run', 'fails', '--project', 'proj_1', '--wait', '--json']);
  t.is(quiet.code, 1);
  t.deepEqual(
    quiet.requests.map((q) => q.path),
    ['/projects/proj_1/pipelines/fails/run', '/pipeline-runs/prun_2/stream', '/projects/proj_1/runs/prun_2'],
  );
  t.deepEqual(JSON.parse(quiet.stdout), ENDED);
});

test.serial('--input NAME=VALUE sets one input (a string) over --inputs; a pair without a name is a usage error', async (t) => {
  const r = await svc(['pipeline', 'run', 'release', '--project', 'proj_1', '--inputs', '{"tag":"v1","n":1}', '--input', 'tag=v2', '--input', 'note=a=b']);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.requests[0].body, { inputs: { tag: 'v2', n: 1, note: 'a=b' } });
  for (const pair of ['tag', '=v2']) {
    const bad = await svc(['pipeline', 'run', 'release', '--project', 'proj_1', '--input', pair]);
    t.is(bad.code, 2);
    t.is(bad.stderr.split('\n')[0], `svc: --input takes NAME=VALUE, got "${pair}"`);
    t.deepEqual(bad.requests, []);
  }
});

test.serial('run without a terminal fails naming the required inputs the server says are missing, and how to pass them', async (t) => {
  const r = await svc(['pipeline', 'run', 'tagged', '--project', 'proj_1', '--input', 'channel=beta']);
  t.is(r.code, 2, r.stderr);
  t.is(
    r.stderr,
    "svc: pipeline tagged needs required input not given: version (the version to tag); pass --input version=VALUE (no terminal to ask on)\nsvc: see 'svc pipeline --help'\n",
  );
  t.deepEqual(
    r.requests.map((q) => [q.method, q.path]),
    [
      ['POST', '/projects/proj_1/pipelines/tagged/run'],
      ['GET', '/projects/proj_1/pipelines/tagged'],
    ],
  );
  const given = await svc(['pipeline', 'run', 'tagged', '--project', 'proj_1', '--input', 'version=1.4.0']);
  t.is(given.code, 0, given.stderr);
  t.is(given.requests.length, 1);
});

/** `svc` with a terminal (script(1) gives it a pty), typing `typed` into it. */
function svcOnTerminal(args: string[], typed: string): Promise<{ code: number; out: string; requests: Seen[] }> {
  const before = seen.length;
  const line = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
  return new Promise((resolve) => {
    const child = execFile(
      'script',
      ['-qec', line, '/dev/null'],
      { env: { PATH: process.env.PATH ?? '', HOME: home, SVC_API_URL: url, SVC_TOKEN: 'tok' }, timeout: 30_000 },
      (error, stdout) => resolve({ code: error ? Number(error.code ?? 1) : 0, out: stdout.replaceAll('\r', ''), requests: seen.slice(before) }),
    );
    child.stdin!.end(typed);
  });
}

test.serial('run on a terminal asks for each missing required input (with its description), then starts the run with the answers', async (t) => {
  const r = await svcOnTerminal(['pipeline', 'run', 'tagged', '--project', 'proj_1', '--json'], '\n1.4.0\n');
  t.is(r.code, 0, r.out);
  t.regex(r.out, /pipeline tagged needs this input:\n/);
  t.is(r.out.split('version (the version to tag): ').length, 3, `asked again after an empty answer: ${r.out}`);
  t.deepEqual(
    r.requests.map((q) => [q.method, q.path, q.body]),
    [
      ['POST', '/projects/proj_1/pipelines/tagged/run', {}],
      ['GET', '/projects/proj_1/pipelines/tagged', undefined],
      ['POST', '/projects/proj_1/pipelines/tagged/run', { inputs: { version: '1.4.0' } }],
    ],
  );
});

test('the prompt takes the default on an empty answer, and stops naming the input when the input ends', async (t) => {
  const input = new PassThrough();
  const output = new PassThrough();
  let asked = '';
  output.on('data', (d) => (asked += String(d)));
  input.end('\n2.0\n');
  const answers = await askInputs(createPrompter(input, output), ['channel', 'version'], {
    channel: { default: 'stable', description: 'where it goes' },
    version: {},
  });
  t.deepEqual(answers, { channel: 'stable', version: '2.0' });
  t.is(asked, 'channel (where it goes) [stable]: version: ');
  const ended = new PassThrough();
  ended.end('');
  const error = await t.throwsAsync(askInputs(createPrompter(ended, new PassThrough()), ['version'], {}), { instanceOf: CliError });
  t.is(error?.message, 'no value given for input version: the run was not started');
});

test.serial('show lists the declared inputs: required, default, description', async (t) => {
  const r = await svc(['pipeline', 'show', 'tagged', '--project', 'proj_1']);
  t.is(r.code, 0, r.stderr);
  t.is(
    r.stdout,
    [
      'pipeline tagged',
      'inputs:',
      '  version (required): the version to tag',
      '  channel [stable]',
      'steps:',
      '  tag: script: git tag v${inputs.version}',
      '',
    ].join('\n'),
  );
});
