/** `svc pricing …`, `svc spend` and `svc analytics …`: rate cards and exchange rates, what an org spent, and its analytics (docs/billing.md). */
import { intFlag, jsonObjectFlag, parseCommand, requireFlag } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { formatFields, formatTable, printJson, printList, printObject, write, type Column } from '../output.ts';

export const PRICING_USAGE = `usage: svc pricing <cards|rates> <command> [flags]   (system administrator)

  cards list [--limit N] [--offset N]       rate cards, newest first
  cards show [ID|current]                   one card, or the card in force now (default)
  cards create --name NAME --provenance TEXT --models JSON [--compute JSON] [--effective-at ISO]
                                            a new card: models {id: {input, output, cache_read, cache_write?, reasoning?}}
                                            in USD per million tokens; compute {class: USD per minute}
  rates list [--currency CUR]               exchange rates, newest first
  rates add CUR RATE_TO_USD [--effective-at ISO]
                                            how many USD one unit of CUR is worth, from then on

Examples:
  svc pricing cards create --name "List prices 2026-01" --provenance "provider price pages read 2026-01-05" \\
    --models '{"gpt-5":{"input":1.25,"output":10,"cache_read":0.125}}' --compute '{"default":0.01}'
  svc pricing rates add EUR 1.08`;

export const SPEND_USAGE = `usage: svc spend [--window 1d|7d|30d|90d]

What the org (--org) spent in the window (default 7d), from its receipts: totals, then by project,
model, harness and day. Billed amounts are in the org's billing currency.

Examples:
  svc spend --window 30d --org org_01h455vb4pex5vsknk084sn02q`;

export const ANALYTICS_USAGE = `usage: svc analytics <summary|jobs|pipelines|env-health> [--window 1d|7d|30d|90d]

  summary      projects, jobs, pipeline runs and environments of the org (--org)
  jobs         jobs created, completed and failed in the window; by project and by day
  pipelines    pipeline runs, success rate and mean duration; by pipeline
  env-health   the org's environments and their health (a snapshot)

Examples:
  svc analytics summary --window 30d`;

const pageFlags = { limit: { type: 'string' }, offset: { type: 'string' } } as const;
const effectiveAt = { 'effective-at': { type: 'string' } } as const;
const CARD_FIELDS = ['id', 'name', 'effective_at', 'provenance', 'models', 'compute', 'created_by', 'created_at'];
const CARD_COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'name' },
  { key: 'effective_at', header: 'EFFECTIVE' },
  { key: 'models', format: (v) => String(Object.keys((v as object) ?? {}).length) },
  { key: 'compute', header: 'CLASSES', format: (v) => Object.keys((v as object) ?? {}).join(',') || '-' },
];
const RATE_COLUMNS: Column[] = [
  { key: 'currency' },
  { key: 'rate_to_usd', header: 'USD PER UNIT' },
  { key: 'effective_at', header: 'EFFECTIVE' },
  { key: 'id' },
];
const WINDOWS = ['1d', '7d', '30d', '90d'];

function requireOrg(ctx: Context, usage: string): string {
  if (!ctx.org) throw new UsageError('name the org (--org ID or `svc config set org ID`)', usage);
  return ctx.org;
}

function windowOf(rest: string[], usage: string): string {
  const { values } = parseCommand(rest, { window: { type: 'string' } }, usage, { min: 0, max: 0 });
  const window = values.window ?? '7d';
  if (!WINDOWS.includes(window)) throw new UsageError(`--window must be one of ${WINDOWS.join(', ')}, got "${window}"`, usage);
  return window;
}

function positiveNumber(value: string, what: string, usage: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${what} must be a number, got "${value}"`, usage);
  return n;
}

/** Sections of a report as small tables under a heading; `--json` prints the body instead. */
function printSections(ctx: Context, body: Record<string, unknown>, head: [string, unknown][], sections: [string, unknown[], Column[]][]): void {
  if (ctx.json) return printJson(body);
  const parts = [formatFields(head)];
  for (const [title, rows, columns] of sections) {
    parts.push(`\n${title}`, rows.length ? formatTable(rows as Record<string, unknown>[], columns) : '  none');
  }
  write(parts.join('\n'));
}

async function runCards(ctx: Context, command: string | undefined, rest: string[]): Promise<number> {
  switch (command) {
    case 'list': {
      const { values } = parseCommand(rest, pageFlags, PRICING_USAGE, { min: 0, max: 0 });
      const query = { limit: intFlag(values.limit, 'limit', PRICING_USAGE), offset: intFlag(values.offset, 'offset', PRICING_USAGE) };
      printList(ctx, await api(ctx).GET('/admin/pricing/rate-cards', { query }), CARD_COLUMNS, 'rate cards');
      return 0;
    }
    case 'show': {
      const { positionals } = parseCommand(rest, {}, PRICING_USAGE, { min: 0, max: 1 });
      printObject(ctx, await api(ctx).GET('/admin/pricing/rate-cards/{card_id}', { params: { card_id: positionals[0] ?? 'current' } }), CARD_FIELDS);
      return 0;
    }
    case 'create': {
      const flags = {
        name: { type: 'string' },
        provenance: { type: 'string' },
        models: { type: 'string' },
        compute: { type: 'string' },
        ...effectiveAt,
      } as const;
      const { values } = parseCommand(rest, flags, PRICING_USAGE, { min: 0, max: 0 });
      const body = {
        name: requireFlag(values.name, 'name', PRICING_USAGE),
        provenance: requireFlag(values.provenance, 'provenance', PRICING_USAGE),
        models: jsonObjectFlag(requireFlag(values.models, 'models', PRICING_USAGE), '--models', PRICING_USAGE)!,
        compute: jsonObjectFlag(values.compute, '--compute', PRICING_USAGE),
        effective_at: values['effective-at'],
      };
      printObject(ctx, await api(ctx).POST('/admin/pricing/rate-cards', { body }), CARD_FIELDS);
      return 0;
    }
    default:
      throw new UsageError(command === undefined ? 'missing cards command' : `unknown cards command "${command}"`, PRICING_USAGE);
  }
}

async function runRates(ctx: Context, command: string | undefined, rest: string[]): Promise<number> {
  switch (command) {
    case 'list': {
      const { values } = parseCommand(rest, { currency: { type: 'string' }, ...pageFlags }, PRICING_USAGE, { min: 0, max: 0 });
      const query = {
        currency: values.currency,
        limit: intFlag(values.limit, 'limit', PRICING_USAGE),
        offset: intFlag(values.offset, 'offset', PRICING_USAGE),
      };
      printList(ctx, await api(ctx).GET('/admin/pricing/exchange-rates', { query }), RATE_COLUMNS, 'exchange rates');
      return 0;
    }
    case 'add': {
      const { values, positionals } = parseCommand(rest, effectiveAt, PRICING_USAGE, { min: 2, max: 2 });
      const body = {
        currency: positionals[0],
        rate_to_usd: positiveNumber(positionals[1], 'RATE_TO_USD', PRICING_USAGE),
        effective_at: values['effective-at'],
      };
      printObject(ctx, await api(ctx).POST('/admin/pricing/exchange-rates', { body }), ['id', 'currency', 'rate_to_usd', 'effective_at', 'created_at']);
      return 0;
    }
    default:
      throw new UsageError(command === undefined ? 'missing rates command' : `unknown rates command "${command}"`, PRICING_USAGE);
  }
}

export async function runPricing(ctx: Context, args: string[]): Promise<number> {
  const [group, command, ...rest] = args;
  if (group === 'cards') return runCards(ctx, command, rest);
  if (group === 'rates') return runRates(ctx, command, rest);
  throw new UsageError(group === undefined ? 'missing pricing command' : `unknown pricing command "${group}"`, PRICING_USAGE);
}

const money = (v: unknown) => (typeof v === 'number' ? v.toFixed(2) : '-');
const spendColumns = (key: string, header: string): Column[] => [
  { key, header, format: (v) => (v === null || v === undefined ? '(none)' : String(v)) },
  { key: 'attempts' },
  { key: 'base_cost_usd', header: 'USD', format: money },
  { key: 'billed_cost', header: 'BILLED', format: money },
  { key: 'input_tokens', header: 'IN TOKENS' },
  { key: 'output_tokens', header: 'OUT TOKENS' },
];

export async function runSpend(ctx: Context, args: string[]): Promise<number> {
  const window = windowOf(args, SPEND_USAGE);
  const org = requireOrg(ctx, SPEND_USAGE);
  const body = await api(ctx).GET('/orgs/{org_id}/spend', { params: { org_id: org }, query: { window } });
  const t = body.totals;
  printSections(
    ctx,
    body,
    [
      ['org', body.org_id],
      ['window', `${body.window} (since ${body.since})`],
      ['attempts', t.attempts],
      ['cost (USD)', money(t.base_cost_usd)],
      [`billed (${body.currency})`, money(t.billed_cost)],
      ['unpriced attempts', t.unpriced_attempts],
    ],
    [
      ['By project', body.by_project, spendColumns('project_id', 'PROJECT')],
      ['By model', body.by_model, spendColumns('model', 'MODEL')],
      ['By harness', body.by_harness, spendColumns('harness', 'HARNESS')],
      ['By day', body.by_day, spendColumns('day', 'DAY')],
    ],
  );
  return 0;
}

const JOB_COLUMNS = (key: string, header: string): Column[] => [
  { key, header },
  { key: 'created' },
  { key: 'completed' },
  { key: 'failed' },
  { key: 'active' },
];
const PIPELINE_COLUMNS: Column[] = [
  { key: 'project_id', header: 'PROJECT' },
  { key: 'pipeline_name', header: 'PIPELINE' },
  { key: 'runs' },
  { key: 'success_rate', header: 'SUCCESS' },
  { key: 'avg_duration_seconds', header: 'AVG S' },
];
const ENV_COLUMNS: Column[] = [{ key: 'name' }, { key: 'project_id', header: 'PROJECT' }, { key: 'status' }];

export async function runAnalytics(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  if (!['summary', 'jobs', 'pipelines', 'env-health'].includes(command ?? '')) {
    throw new UsageError(command === undefined ? 'missing analytics command' : `unknown analytics command "${command}"`, ANALYTICS_USAGE);
  }
  const window = windowOf(rest, ANALYTICS_USAGE);
  const org = requireOrg(ctx, ANALYTICS_USAGE);
  const svc = api(ctx);
  const params = { org_id: org };
  const query = { window };
  const body: Record<string, any> =
    command === 'summary'
      ? await svc.GET('/orgs/{org_id}/analytics/summary', { params, query })
      : command === 'jobs'
        ? await svc.GET('/orgs/{org_id}/analytics/jobs', { params, query })
        : command === 'pipelines'
          ? await svc.GET('/orgs/{org_id}/analytics/pipelines', { params, query })
          : await svc.GET('/orgs/{org_id}/analytics/env-health', { params, query });
  const head: [string, unknown][] = [
    ['as of', body.as_of],
    ['window', body.window ?? '-'],
  ];
  if (command === 'summary') {
    const { jobs, pipelines, environments } = body;
    printSections(
      ctx,
      body,
      [
        ...head,
        ['projects', body.projects],
        ['jobs', `${jobs.created} created, ${jobs.completed} completed, ${jobs.failed} failed, ${jobs.active} active`],
        ['pipelines', `${pipelines.runs} runs, ${(pipelines.success_rate * 100).toFixed(1)}% succeeded, ${pipelines.avg_duration_seconds} s mean`],
        ['environments', `${environments.total} (${environments.healthy} healthy, ${environments.degraded} degraded, ${environments.unknown} unknown)`],
      ],
      [],
    );
  } else if (command === 'jobs') {
    printSections(ctx, body, head, [
      ['By project', body.by_project, JOB_COLUMNS('project_id', 'PROJECT')],
      ['By day', body.by_day, JOB_COLUMNS('day', 'DAY').slice(0, 4)],
    ]);
  } else if (command === 'pipelines') {
    printSections(ctx, body, head, [['By pipeline', body.by_pipeline, PIPELINE_COLUMNS]]);
  } else {
    printSections(ctx, body, [head[0]], [['Environments', body.environments, ENV_COLUMNS]]);
  }
  return 0;
}
