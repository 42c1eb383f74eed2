/** `svc harness list | show`: the coding CLIs this server can run, and whether each is ready here. */
import { intFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { formatFields, printJson, printList, write, type Column } from '../output.ts';

export const HARNESS_USAGE = `usage: svc harness <command> [flags]

  list [--limit N] [--offset N]   the harnesses (harness_a … harness_f and plugins) and whether each
                                  is available on this server (binary found, credentials present)
  show NAME                       one harness by id or alias: variants, models, reasoning levels,
                                  and what to do when it is not available

Examples:
  svc harness list
  svc harness show harness_b`;

type Harness = {
  name: string;
  aliases: string[];
  description: string;
  variants: { name: string; description: string; source: string }[];
  auth: { available: boolean; reason: string; instructions: string[] };
  capabilities: { supports_model: boolean; model_examples: string[]; default_model?: string | null; reasoning: { supported: boolean; levels: string[] } };
};

const COLUMNS: Column[] = [
  { key: 'name' },
  { key: 'aliases', format: (v) => (Array.isArray(v) && v.length ? v.join(', ') : '-') },
  { key: 'auth', header: 'AVAILABLE', format: (v) => ((v as Harness['auth']).available ? 'yes' : 'no') },
  { key: 'description' },
];

export async function runHarness(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'list': {
      const { values: v } = parseCommand(rest, { limit: { type: 'string' }, offset: { type: 'string' } }, HARNESS_USAGE, { min: 0, max: 0 });
      const query = { limit: intFlag(v.limit, 'limit', HARNESS_USAGE), offset: intFlag(v.offset, 'offset', HARNESS_USAGE) };
      printList(ctx, await api(ctx).GET('/harnesses', { query }), COLUMNS, 'harnesses');
      return 0;
    }
    case 'show': {
      const { positionals } = parseCommand(rest, {}, HARNESS_USAGE, { min: 1, max: 1 });
      const h = await api(ctx).GET('/harnesses/{name}', { params: { name: positionals[0] } });
      if (ctx.json) return (printJson(h), 0);
      const { reasoning, supports_model: models, model_examples: examples, default_model: defaultModel } = h.capabilities;
      write(
        formatFields([
          ['name', h.name],
          ['aliases', h.aliases.join(', ')],
          ['description', h.description],
          ['available', h.auth.available ? `yes: ${h.auth.reason}` : `no: ${h.auth.reason}`],
          ...(h.auth.instructions.length ? [['to fix', h.auth.instructions.join(' ')] as [string, unknown]] : []),
          ['models', models ? (examples.length ? `e.g. ${examples.join(', ')}` : 'any the CLI accepts') : 'chosen by the CLI'],
          ...(defaultModel ? [['default model', `${defaultModel} (when the job names none)`] as [string, unknown]] : []),
          ['reasoning', reasoning.supported ? reasoning.levels.join(', ') : 'not supported'],
          ['variants', h.variants.map((x) => `${x.name} (${x.source}): ${x.description}`).join('; ')],
        ]),
      );
      return 0;
    }
    default:
      throw new UsageError(command === undefined ? 'missing harness command' : `unknown harness command "${command}"`, HARNESS_USAGE);
  }
}
