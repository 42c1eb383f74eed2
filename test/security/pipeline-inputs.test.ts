/**
 * Issue 29, item 2: a pipeline's inputs come from its trigger (a pull request's title, a chat
 * message), so whoever can open a pull request writes them. A step's shell command that uses
 * `${inputs.…}` must print such a value, never run it: unquoted, inside double quotes, inside single
 * quotes, in a `run` action's command and in a script step. Attacked through a signed code-host
 * delivery that triggers the pipeline, and through a run started over the API.
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { deliver, hubSignature } from '../integrations/helpers.ts';
import { pullRequest } from '../fixtures/vcshost/deliveries.ts';
import { attemptsOf, git, logLines, syncManifest, until, workerWorld, type WorkerWorld } from '../worker/helpers.ts';
import { fillInputs, inputEnv, inputVariable, shellInputs, withInputVariables } from '../../plugins/worker/inputs.ts';

const HOOK_SECRET = 'pipeline-inputs-hook-secret';

/** Each context a command may put an input in, as the step's name and the command's template of `${inputs.<path>}`. */
const CONTEXTS = (ref: string): [string, string][] => [
  ['bare', `echo bare: \${inputs.${ref}}`],
  ['double', `echo "double: \${inputs.${ref}}"`],
  ['single', `echo 'single: \${inputs.${ref}}'`],
];

/** A pipeline whose steps echo `${inputs.<ref>}` in every context, as `run` actions and as a script step. */
function pipeline(name: string, ref: string, trigger: string): string {
  const steps = CONTEXTS(ref).map(([step, command]) => `      - name: ${step}\n        action: { type: run, with: { command: ${JSON.stringify(command)} } }`);
  steps.push(`      - name: script\n        script: { run: ${JSON.stringify(`echo script: \${inputs.${ref}}`)} }`);
  return `  ${name}:\n    trigger: ${trigger}\n    steps:\n${steps.join('\n')}\n`;
}

const MANIFEST = `
pipelines:
${pipeline('greet-pr', 'pull_request.title', '{ event: pull_request, action: [opened] }')}
${pipeline('greet', 'title', '{ manual: true }')}
  names:
    trigger: { manual: true }
    steps:
      - { name: hyphen, action: { type: run, with: { command: 'echo "notes: \${inputs.release-notes}"' } } }
      - { name: nested, run: 'echo nested: \${inputs.meta.note}' }
      - { name: env, run: 'printf "%s|%s|%s\\n" "$SVC_INPUT_TITLE" "$SVC_INPUT_RELEASE_NOTES" "$SVC_INPUT_NUMBER"' }
      - { name: benign, action: { type: run, with: { command: 'echo pr-\${inputs.number} "#\${inputs.number}" ''n=\${inputs.number}''' } } }
`;

let w: WorkerWorld;
/** Where the injected commands would leave their marks. */
let marks: string;
/** The commit the pull request's head points at (the steps check it out). */
let head: string;

test.before(async () => {
  w = await workerWorld('pinputs');
  marks = path.join(w.scratch, 'marks');
  mkdirSync(marks);
  head = git(w.scratch, '--git-dir', w.bare, 'rev-parse', 'HEAD');
  await syncManifest(w, MANIFEST);
  const secret = await w.api.post(`/projects/${w.projectId}/secrets`, { name: 'VCSHOST_WEBHOOK_SECRET', value: HOOK_SECRET });
  if (secret.statusCode !== 201) throw new Error(`secret: ${JSON.stringify(secret.body)}`);
});
test.after.always(() => w?.stop());

/** Titles that run commands when spliced into a shell line: `$(…)`, backticks, and breaking out of either quote. */
const hostile = () => [
  `x$(touch ${marks}/dollar)$(echo INJECTED-$((6*7)))`,
  `y \`touch ${marks}/backtick\` * end`,
  `'; touch ${marks}/single; echo 'INJECTED-43`,
  `"; touch ${marks}/double; echo "INJECTED-44`,
  `z  $(touch ${marks}/all) \`touch ${marks}/all2\` '; touch ${marks}/all3; ' "; touch ${marks}/all4; "`,
];

const ended = (runId: string) =>
  until(
    async () => {
      const run = (await w.api.get(`/projects/${w.projectId}/runs/${runId}`)).body;
      const over = (status: string) => ['succeeded', 'failed', 'cancelled'].includes(status);
      return over(run.status) && run.steps.every((s: any) => over(s.status)) ? run : null;
    },
    `run ${runId} and its steps to end`,
    60_000,
  );

/** A step's stdout and stderr lines (its last attempt). */
async function output(run: any, step: string): Promise<{ stdout: string[]; stderr: string[] }> {
  const jobId = run.steps.find((s: any) => s.name === step).job_id;
  const [attempt] = (await attemptsOf(w, jobId)).slice(-1);
  if (!attempt) return { stdout: [], stderr: [`step ${step} made no attempt`] };
  const lines = await logLines(w, jobId, attempt.id);
  const of = (stream: string) => lines.filter((l) => l.stream === stream).map((l) => l.line as string);
  return { stdout: of('stdout'), stderr: of('stderr') };
}

async function assertPrintedLiterally(t: any, run: any, value: string): Promise<void> {
  for (const step of ['bare', 'double', 'single', 'script']) {
    const { stdout, stderr } = await output(run, step);
    t.deepEqual(stdout, `${step}: ${value}`.split('\n'), `step ${step} printed the value as it is (stderr: ${stderr.join(' | ')})`);
    t.deepEqual(stderr, [], `step ${step} ran nothing else`);
  }
  t.is(run.status, 'succeeded', JSON.stringify(run.steps.map((s: any) => [s.name, s.status])));
}

test.serial('a hostile pull-request title delivered by the code host is printed, never run', async (t) => {
  for (const [i, title] of hostile().entries()) {
    const body = pullRequest('opened', 900 + i) as any;
    body.pull_request.title = title;
    body.pull_request.head.sha = head;
    const raw = JSON.stringify(body);
    const stored = await deliver(w.srv.server, `/integrations/vcshost/events/${w.projectId}`, raw, {
      'x-github-event': 'pull_request',
      'x-github-delivery': `pinputs-${i}`,
      'x-hub-signature-256': hubSignature(HOOK_SECRET, raw),
    });
    t.is(stored.statusCode, 201, JSON.stringify(stored.body));
    const event = await until(async () => {
      const e = (await w.api.get(`/projects/${w.projectId}/events/${stored.body.id}`)).body;
      return e.status === 'completed' || e.status === 'failed' ? e : null;
    }, 'the event to be routed');
    t.is(event.status, 'completed', JSON.stringify(event));
    const matched = event.routing.matched.find((m: any) => m.name === 'greet-pr');
    t.truthy(matched?.run_id, JSON.stringify(event.routing));
    const run = await ended(matched.run_id);
    await assertPrintedLiterally(t, run, title);
  }
  t.deepEqual(readdirSync(marks), [], 'no injected command ran');
});

test.serial('a hostile input of a run started over the API is printed, never run', async (t) => {
  const values = [...hostile(), `line one\ntouch ${marks}/newline`, '$SVC_JOB_TOKEN ${HOME} $(id) `id`'];
  for (const title of values) {
    const started = await w.api.post(`/projects/${w.projectId}/pipelines/greet/run`, { inputs: { title } });
    t.is(started.statusCode, 201, JSON.stringify(started.body));
    await assertPrintedLiterally(t, await ended(started.body.id), title);
  }
  t.deepEqual(readdirSync(marks), [], 'no injected command ran');
});

test.serial('every input is the variable SVC_INPUT_<NAME>; hyphenated and nested paths are printed literally; benign inputs read as before', async (t) => {
  const notes = `fixed '$(touch ${marks}/notes)' "\`touch ${marks}/notes2\`"`;
  const started = await w.api.post(`/projects/${w.projectId}/pipelines/names/run`, {
    inputs: { title: 'T $(touch x)', 'release-notes': notes, number: 12, meta: { note: `n; touch ${marks}/nested` } },
  });
  t.is(started.statusCode, 201, JSON.stringify(started.body));
  const run = await ended(started.body.id);
  t.is(run.status, 'succeeded', JSON.stringify(run.steps.map((s: any) => [s.name, s.status])));
  t.deepEqual((await output(run, 'hyphen')).stdout, [`notes: ${notes}`]);
  t.deepEqual((await output(run, 'nested')).stdout, [`nested: n; touch ${marks}/nested`]);
  t.deepEqual((await output(run, 'env')).stdout, [`T $(touch x)|${notes}|12`]);
  t.deepEqual((await output(run, 'benign')).stdout, ['pr-12 #12 n=12']);
  t.false(existsSync(path.join(w.bare, 'x')));
  t.deepEqual(readdirSync(marks), [], 'no injected command ran');
});

/** The rewriting alone, run by /bin/sh: every context and value; the exported form a `job` action's command gets too. */
test('shellInputs: /bin/sh prints every value as it is, in every quoting context', (t) => {
  const values = [...hostile(), 'a\nb', '', '  spaced  out  ', '*', "it's", 'say "hi"', '$HOME', '${inputs.v}', 'back\\slash', '-n'];
  const templates: [string, (v: string) => string][] = [
    ['printf "%s\\n" ${inputs.v}', (v) => v],
    ['printf "%s\\n" "[${inputs.v}]"', (v) => `[${v}]`],
    ["printf '%s\\n' '[${inputs.v}]'", (v) => `[${v}]`],
    ['printf "%s\\n" x${inputs.v}y', (v) => `x${v}y`],
    ['printf "%s\\n" "${inputs.v}"\'${ inputs.v }\'${inputs.v}', (v) => `${v}${v}${v}`],
    ['printf "%s\\n" "it\'s ${inputs.v}" \\${inputs.v}', (v) => `it's ${v}\n\${inputs.v}`],
    ['printf "%s\\n" "$(printf %s "${inputs.v}")"', (v) => v],
  ];
  for (const value of values) {
    const inputs = { v: value };
    for (const [template, expected] of templates) {
      const run = (command: string, env: Record<string, string>) =>
        execFileSync('/bin/sh', ['-c', command], { env: { PATH: process.env.PATH!, ...env }, encoding: 'utf8' });
      const rewritten = shellInputs(template);
      t.is(run(rewritten, inputEnv(inputs, [template]).env), `${expected(value)}\n`, `${template} with ${JSON.stringify(value)} -> ${rewritten}`);
      const exported = withInputVariables(template, inputs);
      t.is(run(exported, {}), `${expected(value)}\n`, `${template} with ${JSON.stringify(value)} -> ${exported}`);
    }
  }
  t.deepEqual(readdirSync(marks), []);
});

test('inputVariable: upper-cased, anything but letters and digits as _; inputEnv passes every input and what a command refers to', (t) => {
  t.is(inputVariable('title'), 'SVC_INPUT_TITLE');
  t.is(inputVariable('release-notes'), 'SVC_INPUT_RELEASE_NOTES');
  t.is(inputVariable('pull_request.title'), 'SVC_INPUT_PULL_REQUEST_TITLE');
  t.is(shellInputs('echo ${inputs.missing} ${ inputs.title }'), 'echo "$SVC_INPUT_MISSING" "$SVC_INPUT_TITLE"');
  const inputs = { title: 't', number: 7, pull_request: { title: 'p', draft: false }, 'a-b': 1, a_b: 2, nul: 'x\0y', big: 'x'.repeat(200_000) };
  t.deepEqual(inputEnv(inputs, ['echo ${inputs.pull_request.title}']), {
    env: {
      SVC_INPUT_PULL_REQUEST_TITLE: 'p',
      SVC_INPUT_TITLE: 't',
      SVC_INPUT_NUMBER: '7',
      SVC_INPUT_PULL_REQUEST: '{"title":"p","draft":false}',
    },
    omitted: ['a-b', 'a_b', 'nul', 'big'],
  });
  // A step referring to an input the run lacks fails naming it, rather than running with it empty.
  t.throws(() => inputEnv(inputs, ['echo ${inputs.gone}']), {
    message: /^the step refers to \$\{inputs\.gone\}, but the run has no input gone \(its inputs: title, number/,
  });
  t.is(fillInputs('v${inputs.number}', inputs), 'v7');
  t.throws(() => fillInputs('v${inputs.version}', {}), { message: /no input version \(it has no inputs\)/ }, 'a release tag never becomes `v`');
  t.throws(() => inputEnv(inputs, ['echo ${inputs.big}']), { message: /^input big is \d+ bytes as SVC_INPUT_BIG, over the/ });
  t.throws(() => inputEnv(inputs, ['echo ${inputs.a-b} ${inputs.a_b}']), { message: /would both be SVC_INPUT_A_B/ });
});
