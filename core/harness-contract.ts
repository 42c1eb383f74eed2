/**
 * The harness contract: checks every harness passes, built-in or third-party. Framework-free: each
 * check is a name and a function that throws on a violation, so any test runner can run them:
 *
 *   for (const check of harnessContract(myHarness, fixtures)) test(check.name, async (t) => { await check.run(); t.pass(); });
 */
import { isDeepStrictEqual } from 'node:util';
import path from 'node:path';
import {
  PERMISSION_POLICIES,
  REASONING_EFFORTS,
  type HarnessDefinition,
  type HarnessEvent,
  type HarnessInput,
  type HarnessInvocation,
} from './ports/harness.ts';
import { defineHarness } from './sdk.ts';

export interface HarnessContractFixtures {
  /** Lines the CLI prints for one successful run, in order, ending with a json-result block in its reply. */
  stream: string[];
  /** The totals the usage events of `stream` must add up to. */
  usage?: { inputTokens: number; outputTokens: number };
  /** Lines of a failed run: at least one must parse to an error event. */
  failure?: string[];
}

export interface HarnessContractCheck {
  name: string;
  run(): void | Promise<void>;
}

export class HarnessContractError extends Error {
  override name = 'HarnessContractError';
}

/** Linux refuses a single argument longer than this (MAX_ARG_STRLEN). */
const MAX_ARG_BYTES = 128 * 1024;
const NAME = /^[a-z][a-z0-9_-]*$/;
const ODD_LINES = [
  '',
  '   ',
  'not json at all',
  '{',
  '{"type":',
  '[]',
  '[1,2]',
  'null',
  '42',
  '"text"',
  '{}',
  '{"type":null}',
  '{"type":{}}',
  '{"type":"result","usage":"many"}',
  '{"type":"message","content":12}',
  '\u0000\u0001binary',
  'x'.repeat(1_000_000),
];

function fail(message: string): never {
  throw new HarnessContractError(message);
}

const baseInput = (over: Partial<HarnessInput> = {}): HarnessInput => ({
  prompt: 'Fix the failing test in src/add.ts.',
  workspace: '/tmp/svc-contract-workspace',
  permissionPolicy: 'default',
  env: { SVC_JOB_ID: 'contract-00000000', SVC_API_URL: 'http://127.0.0.1:4701' },
  ...over,
});

function checkInvocation(inv: HarnessInvocation, what: string): void {
  if (!inv || typeof inv !== 'object') fail(`${what}: build() must return {command, args, env, files}`);
  if (typeof inv.command !== 'string' || !inv.command) fail(`${what}: command must be a non-empty string`);
  if (!Array.isArray(inv.args) || inv.args.some((a) => typeof a !== 'string')) fail(`${what}: args must be an array of strings`);
  for (const [key, value] of [
    ['env', inv.env],
    ['files', inv.files],
  ] as const) {
    if (!value || typeof value !== 'object' || Array.isArray(value)) fail(`${what}: ${key} must be an object`);
    for (const [k, v] of Object.entries(value)) if (typeof v !== 'string') fail(`${what}: ${key}.${k} must be a string`);
  }
  for (const file of Object.keys(inv.files)) {
    const norm = path.posix.normalize(file);
    if (path.isAbsolute(file) || norm.startsWith('..') || norm === '.') fail(`${what}: file '${file}' must be a path inside the workspace`);
  }
  const long = inv.args.find((a) => Buffer.byteLength(a) > MAX_ARG_BYTES);
  if (long !== undefined) fail(`${what}: an argument of ${Buffer.byteLength(long)} bytes exceeds the ${MAX_ARG_BYTES}-byte limit of one argument`);
}

/** Where the invocation could carry a piece of text: args, env values, file contents. */
const carries = (inv: HarnessInvocation, needle: string) =>
  [...inv.args, ...Object.values(inv.env), ...Object.values(inv.files)].some((s) => s.includes(needle));

function checkEvent(event: HarnessEvent, where: string): void {
  const e = event as Record<string, unknown>;
  const isCount = (v: unknown) => v === undefined || (Number.isInteger(v) && (v as number) >= 0);
  switch (e?.type) {
    case 'message':
      if (typeof e.text === 'string') return;
      break;
    case 'tool':
      if (typeof e.name === 'string' && e.name) return;
      break;
    case 'error':
      if (typeof e.message === 'string') return;
      break;
    case 'raw':
      if (typeof e.text === 'string') return;
      break;
    case 'usage':
      if (
        Number.isInteger(e.inputTokens) &&
        Number.isInteger(e.outputTokens) &&
        (e.inputTokens as number) >= 0 &&
        (e.outputTokens as number) >= 0 &&
        isCount(e.cacheReadTokens) &&
        isCount(e.cacheWriteTokens) &&
        isCount(e.reasoningTokens) &&
        isCount(e.durationMs)
      )
        return;
      break;
  }
  fail(`${where}: not a valid harness event: ${JSON.stringify(event)?.slice(0, 200)}`);
}

function parseAll(def: HarnessDefinition, lines: string[], where: string): HarnessEvent[] {
  return lines.flatMap((line, i) => {
    const events = def.parseLine(line);
    if (!Array.isArray(events)) fail(`${where} line ${i + 1}: parseLine must return an array`);
    events.forEach((e) => checkEvent(e, `${where} line ${i + 1}`));
    return events;
  });
}

/** Message texts joined as a reader sees them: fragments continue, whole messages start a new line. */
export function messageText(events: HarnessEvent[]): string {
  let out = '';
  for (const e of events) {
    if (e.type !== 'message') continue;
    out += e.delta || out === '' ? e.text : `\n${e.text}`;
  }
  return out;
}

export function harnessContract(definition: HarnessDefinition, fixtures: HarnessContractFixtures): HarnessContractCheck[] {
  const def = definition;
  const build = (over: Partial<HarnessInput> = {}) => def.build(baseInput(over));
  const checks: HarnessContractCheck[] = [
    {
      name: 'is a valid definition',
      run() {
        defineHarness(def);
        if (typeof def.description !== 'string' || !def.description.trim()) fail('description must be a non-empty string');
        for (const alias of def.aliases ?? []) {
          if (!NAME.test(alias) || alias === def.id) fail(`alias '${alias}' must be a lower-case name other than the id`);
        }
        const names = (def.variants ?? []).map((v) => v.name);
        if (names.some((n) => typeof n !== 'string' || !n || n.includes(':')) || new Set(names).size !== names.length)
          fail('variant names must be unique non-empty strings without a colon');
        const reasoning = def.capabilities?.reasoning;
        if (reasoning && reasoning.levels.some((l) => !(REASONING_EFFORTS as readonly string[]).includes(l)))
          fail(`reasoning levels must be among ${REASONING_EFFORTS.join(', ')}`);
        if (reasoning && !reasoning.supported && reasoning.levels.length) fail('reasoning levels are listed but reasoning is not supported');
      },
    },
    {
      name: 'builds a valid invocation for every permission policy, the never and yolo ones distinct',
      run() {
        const built = PERMISSION_POLICIES.map((policy) => {
          const inv = build({ permissionPolicy: policy });
          checkInvocation(inv, `permission policy ${policy}`);
          return inv;
        });
        if (isDeepStrictEqual(built[PERMISSION_POLICIES.indexOf('never')], built[PERMISSION_POLICIES.indexOf('yolo')])) {
          fail("permission policies never and yolo build the same invocation: map them to the CLI's own flags");
        }
      },
    },
    {
      name: 'passes the prompt and the job environment, and a long prompt fits',
      run() {
        const marker = 'CONTRACT-PROMPT-7f3a';
        const inv = build({ prompt: `${marker} ${'-leading dash safe'}` });
        if (!carries(inv, marker)) fail('the prompt does not reach the CLI (not in args, env or files)');
        if (inv.env.SVC_JOB_ID !== 'contract-00000000') fail('the job environment (input.env) must be passed through to the CLI');
        const big = build({ prompt: `${marker}-BIG ${'x'.repeat(300_000)}` });
        checkInvocation(big, 'a 300 kB prompt');
        if (!carries(big, `${marker}-BIG`)) fail('a 300 kB prompt does not reach the CLI');
      },
    },
    {
      name: 'honours model and reasoning options as its capabilities say',
      run() {
        const plain = build();
        if (def.capabilities?.supportsModel) {
          const withModel = build({ model: 'contract-model-x' });
          checkInvocation(withModel, 'with a model');
          if (!carries(withModel, 'contract-model-x')) fail('supports_model is true but the model does not reach the CLI');
        }
        if (def.capabilities?.reasoning.supported) {
          for (const level of def.capabilities.reasoning.levels) {
            const inv = build({ reasoningEffort: level });
            checkInvocation(inv, `reasoning ${level}`);
            if (isDeepStrictEqual(inv, plain)) fail(`reasoning effort ${level} does not change the invocation`);
          }
        }
        for (const variant of def.variants ?? []) checkInvocation(build({ variant: variant.name }), `variant ${variant.name}`);
      },
    },
    {
      name: 'build is deterministic and leaves its input alone',
      run() {
        const input = baseInput({ model: 'm', reasoningEffort: def.capabilities?.reasoning.levels[0] });
        const copy = structuredClone(input);
        const a = def.build(input);
        const b = def.build(input);
        if (!isDeepStrictEqual(input, copy)) fail('build() changed its input');
        if (!isDeepStrictEqual(a, b)) fail('build() gave two different invocations for the same input');
      },
    },
    {
      name: 'parseLine never throws and returns valid events for odd lines',
      run() {
        for (const line of ODD_LINES) {
          let events: HarnessEvent[];
          try {
            events = def.parseLine(line);
          } catch (e) {
            fail(`parseLine threw on ${JSON.stringify(line.slice(0, 40))}: ${(e as Error).message}`);
          }
          if (!Array.isArray(events)) fail(`parseLine must return an array (line ${JSON.stringify(line.slice(0, 40))})`);
          events.forEach((e) => checkEvent(e, `line ${JSON.stringify(line.slice(0, 40))}`));
        }
      },
    },
    {
      name: 'parses the sample stream into messages with a json-result block, and usage',
      run() {
        const events = parseAll(def, fixtures.stream, 'sample stream');
        if (!events.some((e) => e.type === 'message')) fail('the sample stream gives no message event');
        if (!/```json-result/.test(messageText(events))) fail('the messages of the sample stream hold no json-result block');
        const usage = events.filter((e) => e.type === 'usage');
        if (usage.length === 0) fail('the sample stream gives no usage event');
        const total = usage.reduce((t, u) => ({ inputTokens: t.inputTokens + u.inputTokens, outputTokens: t.outputTokens + u.outputTokens }), {
          inputTokens: 0,
          outputTokens: 0,
        });
        if (fixtures.usage && !isDeepStrictEqual(total, fixtures.usage))
          fail(`usage adds up to ${JSON.stringify(total)}, expected ${JSON.stringify(fixtures.usage)}`);
        if (events.some((e) => e.type === 'error')) fail('a successful sample stream gives an error event');
      },
    },
  ];
  if (fixtures.failure) {
    const failure = fixtures.failure;
    checks.push({
      name: 'reports a failed run as an error event',
      run() {
        if (!parseAll(def, failure, 'failure stream').some((e) => e.type === 'error')) fail('the failure lines give no error event');
      },
    });
  }
  return checks.map((c) => ({ name: `${def?.id ?? 'harness'}: ${c.name}`, run: c.run }));
}
