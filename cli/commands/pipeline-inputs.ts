/**
 * A pipeline run's inputs on the command line (`--inputs JSON`, `--input NAME=VALUE`), and asking
 * for the required ones the server says are missing (docs/pipelines.md, "Declared inputs").
 */
import type { Schemas } from '../../client/index.ts';
import type { Context } from '../config.ts';
import { ApiError, CliError, UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { jsonObjectFlag } from '../args.ts';
import { canPrompt, createPrompter, type Prompter } from '../prompt.ts';

/** A declared input, as `GET /projects/{id}/pipelines/{name}` shows it. */
export interface InputDeclaration {
  required?: boolean;
  default?: string;
  description?: string;
}
type Declarations = Record<string, InputDeclaration>;

/** `--inputs JSON`, then each `--input NAME=VALUE` over it (the value a string, `=` and all after the first). */
export function inputsFromFlags(json: string | undefined, pairs: string[] | undefined, usage: string): Record<string, unknown> | undefined {
  const inputs = jsonObjectFlag(json, '--inputs', usage);
  if (pairs === undefined || pairs.length === 0) return inputs;
  const out: Record<string, unknown> = { ...inputs };
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--input takes NAME=VALUE, got "${pair}"`, usage);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

/** The required inputs a 422 from the run route names, when that is all it refused for. */
function missingOf(error: unknown): string[] | null {
  if (!(error instanceof ApiError) || error.statusCode !== 422 || typeof error.body !== 'object' || error.body === null) return null;
  const { missing_inputs: missing, undeclared_inputs: undeclared } = error.body as Record<string, unknown>;
  if (undeclared !== undefined || !Array.isArray(missing) || missing.length === 0) return null;
  return missing.map(String);
}

/** The pipeline's declared inputs, for their descriptions and defaults; none when it cannot be read. */
async function declarationsOf(ctx: Context, project: string, pipeline: string): Promise<Declarations> {
  try {
    const def = await api(ctx).GET('/projects/{project_id}/pipelines/{name}', { params: { project_id: project, name: pipeline } });
    return (def.inputs ?? {}) as Declarations; // the manifest's own model: free-form in the API
  } catch {
    return {};
  }
}

const described = (name: string, d: InputDeclaration | undefined) => (d?.description ? `${name} (${d.description})` : name);

/**
 * Asks for each missing input: `version (the version to tag) [1.10]: `. An empty answer takes the
 * default, or asks again when there is none; the input ending stops with an error naming the input.
 */
export async function askInputs(prompter: Prompter, missing: string[], declared: Declarations): Promise<Record<string, string>> {
  const answers: Record<string, string> = {};
  for (const name of missing) {
    const d = declared[name];
    const question = `${described(name, d)}${d?.default ? ` [${d.default}]` : ''}: `;
    for (;;) {
      const answer = await prompter.ask(question);
      if (answer === null) throw new CliError(`no value given for input ${name}: the run was not started`);
      const value = answer.trim() === '' ? (d?.default ?? '') : answer;
      if (value !== '') {
        answers[name] = value;
        break;
      }
    }
  }
  return answers;
}

/**
 * POST the run. When the server refuses it only for missing required inputs, ask for them on a
 * terminal and post again with the answers; without one, fail listing them and how to pass them.
 * The refused request wrote nothing, so posting again is safe.
 */
export async function startRun(
  ctx: Context,
  project: string,
  pipeline: string,
  body: { inputs?: Record<string, unknown> },
  usage: string,
): Promise<Schemas['PipelineRun']> {
  try {
    return await api(ctx).POST('/projects/{project_id}/pipelines/{name}/run', { params: { project_id: project, name: pipeline }, body });
  } catch (error) {
    const missing = missingOf(error);
    if (!missing) throw error;
    const declared = await declarationsOf(ctx, project, pipeline);
    if (!canPrompt()) {
      const list = missing.map((name) => described(name, declared[name])).join(', ');
      const flags = missing.map((name) => `--input ${name}=VALUE`).join(' ');
      throw new UsageError(
        `pipeline ${pipeline} needs required input${missing.length > 1 ? 's' : ''} not given: ${list}; pass ${flags} (no terminal to ask on)`,
        usage,
      );
    }
    const prompter = createPrompter();
    try {
      process.stderr.write(`pipeline ${pipeline} needs ${missing.length > 1 ? 'these inputs' : 'this input'}:\n`);
      const answers = await askInputs(prompter, missing, declared);
      return await api(ctx).POST('/projects/{project_id}/pipelines/{name}/run', {
        params: { project_id: project, name: pipeline },
        body: { ...body, inputs: { ...body.inputs, ...answers } },
      });
    } finally {
      prompter.close();
    }
  }
}
