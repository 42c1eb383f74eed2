import { intFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { cell, printJson, printList, write, type Column } from '../output.ts';
import { requireProject } from './manifest.ts';
import type { InputDeclaration } from './pipeline-inputs.ts';

interface Step {
  name: string;
  depends_on?: string[];
  action?: { type: string };
  script?: { run: string };
  agent?: { name?: string; prompt?: string };
}

/** The step's kind and what it does, in one cell. */
function describeStep(step: Step): string {
  if (step.action) return `action ${step.action.type}`;
  if (step.script) return `script: ${step.script.run}`;
  if (step.agent) return step.agent.name ? `agent ${step.agent.name}` : `agent: ${step.agent.prompt ?? ''}`;
  return '-';
}

/** `version (required): the version to tag`, `channel [stable]: where it goes`. */
function describeInput(name: string, d: InputDeclaration): string {
  const marks = `${d.required ? ' (required)' : ''}${d.default !== undefined ? ` [${d.default}]` : ''}`;
  return `${name}${marks}${d.description ? `: ${d.description}` : ''}`;
}

const COLUMNS: Column[] = [
  { key: 'name' },
  { key: 'steps', format: (v) => String((v as Step[] | undefined)?.length ?? 0) },
  { key: 'trigger', format: (v) => (v ? cell(v) : '-') },
];

/** `svc workflow` and `svc pipeline`: list and show the current manifest's definitions. */
export async function runDefinitions(ctx: Context, args: string[], section: 'workflows' | 'pipelines', usage: string): Promise<number> {
  const [command, ...rest] = args;
  const noun = section.slice(0, -1);
  const project_id = () => requireProject(ctx, usage);
  switch (command) {
    case 'list': {
      const { values } = parseCommand(rest, { limit: { type: 'string' }, offset: { type: 'string' } }, usage, { min: 0, max: 0 });
      const query = { limit: intFlag(values.limit, 'limit', usage), offset: intFlag(values.offset, 'offset', usage) };
      printList(
        ctx,
        section === 'workflows'
          ? await api(ctx).GET('/projects/{project_id}/workflows', { params: { project_id: project_id() }, query })
          : await api(ctx).GET('/projects/{project_id}/pipelines', { params: { project_id: project_id() }, query }),
        COLUMNS,
        section,
      );
      return 0;
    }
    case 'show': {
      const { positionals } = parseCommand(rest, {}, usage, { min: 1, max: 1 });
      const params = { project_id: project_id(), name: positionals[0] };
      // the manifest's own model, free-form in the API
      const body = (section === 'workflows'
        ? await api(ctx).GET('/projects/{project_id}/workflows/{name}', { params })
        : await api(ctx).GET('/projects/{project_id}/pipelines/{name}', { params })) as unknown as {
        name: string;
        steps: Step[];
        inputs?: Record<string, InputDeclaration>;
      };
      if (ctx.json) return (printJson(body), 0);
      const { name, steps, inputs, ...settings } = body;
      write(`${noun} ${name}`);
      for (const [key, value] of Object.entries(settings)) write(`${key}: ${cell(value)}`);
      if (inputs) {
        write('inputs:');
        for (const [input, d] of Object.entries(inputs)) write(`  ${describeInput(input, d)}`);
      }
      write('steps:');
      for (const step of steps) {
        const after = step.depends_on?.length ? `  (after ${step.depends_on.join(', ')})` : '';
        write(`  ${step.name}: ${describeStep(step)}${after}`);
      }
      return 0;
    }
    case undefined:
      throw new UsageError(`missing ${noun} command`, usage);
    default:
      throw new UsageError(`unknown ${noun} command "${command}"`, usage);
  }
}
