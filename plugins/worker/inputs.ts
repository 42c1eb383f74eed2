import type { AttemptWork } from '../../core/ports/attempts.ts';
import { isObject } from '../../core/is-object.ts';
import { WorkerFailure } from './failure.ts';
import { inputVariable } from '../../domain/manifest/pipeline-inputs.ts';

/**
 * A run's inputs in what a step runs (docs/pipelines.md, "Inputs in steps"). Inputs come from
 * triggers: a pull request's title, a chat message, a custom event's payload, so whoever opens a
 * pull request writes them. Where a shell reads the text (a script step's `run`, a `run` action's
 * `command`, a `job` action's command line) `${inputs.<path>}` becomes a quoted reference to the
 * variable `SVC_INPUT_<PATH>`, which holds the value: the shell expands it as data and never parses
 * it as code. Elsewhere (titles, branch and environment names, chat messages) the value is put in
 * as it is.
 */

/** `${inputs.a.b}`, spaces allowed inside the braces. */
const INPUT_REF = /\$\{\s*inputs\.([\w.-]+)\s*\}/g;
const INPUT_REF_AT = new RegExp(INPUT_REF.source, 'y');

/** A single variable's `NAME=value` must stay under the kernel's limit on one string (MAX_ARG_STRLEN, 128 KiB). */
export const MAX_INPUT_VARIABLE_BYTES = 128 * 1024 - 1;
/** The inputs no step refers to are passed while their variables take at most this much in all. */
export const MAX_INPUT_ENV_BYTES = 256 * 1024;

/** The run's inputs (the pipeline's or workflow's `request_json`). */
export function inputsOf(work: AttemptWork): Record<string, unknown> {
  try {
    const parsed = JSON.parse(String(work.job.hints.request_json ?? '{}'));
    return isObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** The input at a dotted path; undefined when any part is missing. */
function inputAt(inputs: Record<string, unknown>, path: string): unknown {
  let v: unknown = inputs;
  for (const key of path.split('.')) v = isObject(v) && Object.hasOwn(v, key) ? v[key] : undefined;
  return v;
}

/**
 * The input a step refers to. A missing one fails the step naming it: left empty, `v${inputs.version}`
 * would release `v` (a null input is set, and empty).
 */
function referredInput(inputs: Record<string, unknown>, path: string): unknown {
  const value = inputAt(inputs, path);
  if (value === undefined) {
    const given = Object.keys(inputs);
    throw new WorkerFailure(
      `the step refers to \${inputs.${path}}, but the run has no input ${path} (${given.length ? `its inputs: ${given.join(', ')}` : 'it has no inputs'}): pass it when starting the run (svc pipeline run --inputs, or the environment's pipeline_inputs)`,
    );
  }
  return value;
}

/** An input as text: a string as it is, an object or list as JSON, nothing as empty. */
function asText(v: unknown): string {
  return v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** `SVC_INPUT_<PATH>`: one rule with the manifest's check that two declared inputs never share a variable. */
export { inputVariable };

/**
 * `${inputs.a.b}` in an action input that no shell reads (an environment name `pr-${inputs.number}`,
 * a pull request's title, a chat message) is that input as it is; an unknown path fails the step.
 */
export function fillInputs(value: unknown, inputs: Record<string, unknown>): unknown {
  if (typeof value !== 'string') return value;
  return value.replace(INPUT_REF, (_m, path: string) => asText(referredInput(inputs, path)));
}

/** The paths a text refers to with `${inputs.…}`. */
export function inputRefs(text: string): string[] {
  return [...new Set([...text.matchAll(INPUT_REF)].map((m) => m[1]))];
}

type Quoting = 'none' | 'double' | 'single' | 'arithmetic';

/**
 * A shell command line with every `${inputs.<path>}` made a reference to `SVC_INPUT_<PATH>`, quoted
 * for where it stands: `"$SVC_INPUT_X"` outside quotes, `${SVC_INPUT_X}` inside double quotes and
 * `$((…))`, and `'"${SVC_INPUT_X}"'` inside single quotes (the quote is closed around it); a `$(…)`
 * starts anew inside. What the shell puts there is the variable's value, which it never parses
 * again: no `$(…)`, backquote or quote in it runs anything, whatever the surrounding text. A
 * backslash before `${inputs.…}` (outside single quotes) keeps it as text.
 */
export function shellInputs(command: string): string {
  let out = '';
  let quoting: Quoting = 'none';
  /** The `$(…)` and `$((…))` the position is in: the quoting outside each, and the parentheses open in it. */
  const nested: { outside: Quoting; open: number }[] = [];
  for (let i = 0; i < command.length;) {
    INPUT_REF_AT.lastIndex = i;
    const ref = INPUT_REF_AT.exec(command);
    if (ref) {
      const name = inputVariable(ref[1]);
      out += quoting === 'none' ? `"$${name}"` : quoting === 'single' ? `'"\${${name}}"'` : `\${${name}}`;
      i += ref[0].length;
      continue;
    }
    const c = command[i];
    let take = 1;
    if (quoting === 'single') {
      if (c === "'") quoting = 'none';
    } else if (c === '\\') take = 2;
    else if (command.startsWith('$((', i)) {
      nested.push({ outside: quoting, open: 0 });
      quoting = 'arithmetic';
      take = 3;
    } else if (command.startsWith('$(', i)) {
      nested.push({ outside: quoting, open: 0 });
      quoting = 'none';
      take = 2;
    } else if (quoting === 'double') {
      if (c === '"') quoting = 'none';
    } else if (c === '(' && nested.length > 0) nested[nested.length - 1].open += 1;
    else if (c === ')' && nested.length > 0) {
      const frame = nested[nested.length - 1];
      if (frame.open > 0) frame.open -= 1;
      else if (quoting === 'none' || command[i + 1] === ')') {
        if (quoting === 'arithmetic') take = 2;
        quoting = nested.pop()!.outside;
      }
    } else if (quoting === 'none' && c === "'") quoting = 'single';
    else if (quoting === 'none' && c === '"') quoting = 'double';
    out += command.slice(i, i + take);
    i += take;
  }
  return out;
}

/** The text a shell runs for a step (`hints.step`): a script's `run`, a `run` or `job` action's command line; else none. */
export function shellTextOf(step: unknown): string | null {
  if (!isObject(step)) return null;
  if (step.kind === 'script' && isObject(step.script) && typeof step.script.run === 'string') return step.script.run;
  if (step.kind === 'action' && isObject(step.action) && isObject(step.action.with)) {
    const { type } = step.action;
    const command = step.action.with.command;
    if ((type === 'run' || type === 'job') && typeof command === 'string') return command;
  }
  return null;
}

const variableBytes = (name: string, value: string) => Buffer.byteLength(name) + 1 + Buffer.byteLength(value);

/**
 * The inputs as variables: `SVC_INPUT_<PATH>` for every path a shell text refers to, then
 * `SVC_INPUT_<NAME>` for every top-level input (an object or list as JSON). A path referred to
 * always has its variable: one too long for a process's environment, or holding a NUL, fails the
 * attempt naming it. Of the others, a name two inputs would share, a value with a NUL, and what
 * goes past MAX_INPUT_ENV_BYTES are left out (`omitted`, by input name).
 */
export function inputEnv(inputs: Record<string, unknown>, shellTexts: (string | null)[]): { env: Record<string, string>; omitted: string[] } {
  const env: Record<string, string> = {};
  const referred = new Map<string, string>();
  for (const path of shellTexts.flatMap((text) => (text ? inputRefs(text) : []))) {
    const name = inputVariable(path);
    const other = referred.get(name);
    if (other !== undefined && other !== path)
      throw new WorkerFailure(`\${inputs.${other}} and \${inputs.${path}} would both be ${name}: rename one of the inputs the step uses`);
    const value = asText(referredInput(inputs, path));
    if (value.includes('\0')) throw new WorkerFailure(`input ${path} holds a NUL character, which no process variable (${name}) can carry`);
    const bytes = variableBytes(name, value);
    if (bytes > MAX_INPUT_VARIABLE_BYTES)
      throw new WorkerFailure(`input ${path} is ${bytes} bytes as ${name}, over the ${MAX_INPUT_VARIABLE_BYTES} a process variable may hold`);
    referred.set(name, path);
    env[name] = value;
  }
  const omitted: string[] = [];
  const byName = new Map<string, string[]>();
  for (const key of Object.keys(inputs)) byName.set(inputVariable(key), [...(byName.get(inputVariable(key)) ?? []), key]);
  let budget = MAX_INPUT_ENV_BYTES;
  for (const [name, keys] of byName) {
    if (referred.has(name)) {
      if (!keys.includes(referred.get(name)!)) omitted.push(...keys);
      continue;
    }
    const value = asText(inputs[keys[0]]);
    const bytes = variableBytes(name, value);
    if (keys.length > 1 || value.includes('\0') || bytes > MAX_INPUT_VARIABLE_BYTES || bytes > budget) {
      omitted.push(...keys);
      continue;
    }
    budget -= bytes;
    env[name] = value;
  }
  return { env, omitted };
}

/**
 * A command line for a shell the worker does not start itself (a `job` action's, run in the
 * service's image): the variables it refers to set and exported at its start, where nothing of the
 * command can change how they are quoted, then the command with its references (shellInputs).
 */
export function withInputVariables(command: string, inputs: Record<string, unknown>): string {
  const names = [...new Set(inputRefs(command).map(inputVariable))];
  if (names.length === 0) return command;
  const { env } = inputEnv(inputs, [command]);
  const quoted = (v: string) => `'${v.replaceAll("'", `'\\''`)}'`;
  return `${names.map((n) => `${n}=${quoted(env[n])}`).join(' ')}; export ${names.join(' ')}\n${shellInputs(command)}`;
}
