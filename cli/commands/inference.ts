/** `svc inference …` and `svc models …`: inference targets, the managed-model catalog and the models to send to the proxy (docs/inference.md). */
import { intFlag, parseCommand, requireFlag } from '../args.ts';
import type { Schemas } from '../../client/index.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api, type Query } from '../http.ts';
import { printDone, printList, printObject, type Column } from '../output.ts';

export const INFERENCE_USAGE = `usage: svc inference <targets|managed> <command> [flags]

  targets list [--system]                 the org's inference targets (or the system's)
  targets create NAME --kind openai|anthropic --base-url URL [--credential-secret NAME]
                 [--allowed-models M1,M2] [--request-timeout-ms N] [--idle-timeout-ms N] [--responses-api true|false] [--system]
                                          a named upstream; the key is the NAME of a secret, never a value
  targets get ID
  targets update ID [--kind K] [--base-url URL] [--credential-secret NAME] [--allowed-models M1,M2]
                 [--request-timeout-ms N] [--idle-timeout-ms N] [--responses-api true|false]
  targets delete ID
  managed list                            managed/<name> models the org (or --project) may use, with the system's
  managed add NAME --target ID --upstream-model M [--input-price P] [--output-price P]
                 [--cache-read-price P] [--cache-write-price P] [--reasoning-price P]
                 [--projects P1,P2] [--description TEXT] [--system]
                                          prices in USD per million tokens
  managed delete NAME [--system]          NAME or managed/NAME

The org is --org, else the profile's org; --system acts on the system's entries (system administrator).

Examples:
  svc inference targets create openai-main --kind openai --base-url https://api.openai.com/v1 --credential-secret OPENAI_KEY
  svc inference managed add fast --target TARGET_ID --upstream-model gpt-4o-mini`;

export const MODELS_USAGE = `usage: svc models list [--source provider|managed] [--limit N] [--offset N]

Models to send to the proxy (POST /inference/v1/chat/completions): the managed/<name> entries the
org (--org) or project (--project) may use, then every configured provider's models.

Examples:
  svc models list --source managed`;

const TARGET_COLUMNS: Column[] = [
  { key: 'name' },
  { key: 'kind' },
  { key: 'scope' },
  { key: 'base_url', header: 'BASE URL' },
  { key: 'credential_secret', header: 'SECRET' },
  { key: 'allowed_models', header: 'MODELS', format: (v) => (Array.isArray(v) && v.length ? v.join(',') : 'any') },
  { key: 'id' },
];
const TARGET_FIELDS = [
  'id',
  'name',
  'kind',
  'scope',
  'org_id',
  'base_url',
  'credential_secret',
  'allowed_models',
  'request_timeout_ms',
  'idle_timeout_ms',
  'responses_api',
  'created_at',
  'updated_at',
];
const price = (key: string) => (_: unknown, row: Record<string, unknown>) => {
  const v = (row.prices as Record<string, number | null> | undefined)?.[key];
  return v === null || v === undefined ? '-' : String(v);
};
const MANAGED_COLUMNS: Column[] = [
  { key: 'canonical_model_id', header: 'MODEL' },
  { key: 'scope' },
  { key: 'target', format: (v) => String((v as { name?: string })?.name ?? '-') },
  { key: 'upstream_model', header: 'UPSTREAM' },
  { key: 'in', header: 'IN $/M', format: price('input') },
  { key: 'out', header: 'OUT $/M', format: price('output') },
  { key: 'project_ids', header: 'PROJECTS', format: (v) => (Array.isArray(v) ? v.join(',') : 'all') },
];
const MODEL_COLUMNS: Column[] = [
  { key: 'id', header: 'MODEL' },
  { key: 'source' },
  { key: 'kind' },
  { key: 'via', header: 'VIA', format: (_, row) => String(row.target ?? row.provider ?? '-') },
  { key: 'upstream_model', header: 'UPSTREAM' },
];

const targetFlags = {
  kind: { type: 'string' },
  'base-url': { type: 'string' },
  'credential-secret': { type: 'string' },
  'allowed-models': { type: 'string' },
  'request-timeout-ms': { type: 'string' },
  'idle-timeout-ms': { type: 'string' },
  'responses-api': { type: 'string' },
} as const;
/** `--responses-api true|false` (an openai target whose upstream also serves the Responses API). */
function boolFlag(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') throw new UsageError('--responses-api takes true or false', INFERENCE_USAGE);
  return value === 'true';
}
const pageFlags = { limit: { type: 'string' }, offset: { type: 'string' } } as const;

const list = (value: string | undefined) =>
  value === undefined
    ? undefined
    : value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);

function numberFlag(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${name} must be a number, got "${value}"`, INFERENCE_USAGE);
  return n;
}

/** The org the command acts on, or null for --system. */
function scopeOf(ctx: Context, system: boolean | undefined): string | null {
  if (system) return null;
  if (!ctx.org) throw new UsageError('name the org (--org ID or `svc config set org ID`), or pass --system', INFERENCE_USAGE);
  return ctx.org;
}

function pageQuery(values: { limit?: string; offset?: string }, usage: string): Query {
  return { limit: intFlag(values.limit, 'limit', usage), offset: intFlag(values.offset, 'offset', usage) };
}

async function runTargets(ctx: Context, command: string | undefined, rest: string[]): Promise<number> {
  switch (command) {
    case 'list': {
      const { values } = parseCommand(rest, { system: { type: 'boolean' }, ...pageFlags }, INFERENCE_USAGE, { min: 0, max: 0 });
      const org = scopeOf(ctx, values.system);
      printList(
        ctx,
        await api(ctx).GET('/inference/targets', { query: { ...pageQuery(values, INFERENCE_USAGE), org_id: org ?? undefined } }),
        TARGET_COLUMNS,
        'inference targets',
      );
      return 0;
    }
    case 'create': {
      const { values, positionals } = parseCommand(rest, { ...targetFlags, system: { type: 'boolean' } }, INFERENCE_USAGE, { min: 1, max: 1 });
      const body = {
        org_id: scopeOf(ctx, values.system),
        name: positionals[0],
        kind: requireFlag(values.kind, 'kind', INFERENCE_USAGE) as Schemas['CreateInferenceTarget']['kind'],
        base_url: requireFlag(values['base-url'], 'base-url', INFERENCE_USAGE),
        credential_secret: values['credential-secret'],
        allowed_models: list(values['allowed-models']),
        request_timeout_ms: intFlag(values['request-timeout-ms'], 'request-timeout-ms', INFERENCE_USAGE),
        idle_timeout_ms: intFlag(values['idle-timeout-ms'], 'idle-timeout-ms', INFERENCE_USAGE),
        responses_api: boolFlag(values['responses-api']),
      };
      printObject(ctx, await api(ctx).POST('/inference/targets', { body }), TARGET_FIELDS);
      return 0;
    }
    case 'get': {
      const { positionals } = parseCommand(rest, {}, INFERENCE_USAGE, { min: 1, max: 1 });
      printObject(ctx, await api(ctx).GET('/inference/targets/{target_id}', { params: { target_id: positionals[0] } }), TARGET_FIELDS);
      return 0;
    }
    case 'update': {
      const { values, positionals } = parseCommand(rest, targetFlags, INFERENCE_USAGE, { min: 1, max: 1 });
      const body = Object.fromEntries(
        Object.entries({
          kind: values.kind,
          base_url: values['base-url'],
          credential_secret: values['credential-secret'],
          allowed_models: list(values['allowed-models']),
          request_timeout_ms: intFlag(values['request-timeout-ms'], 'request-timeout-ms', INFERENCE_USAGE),
          idle_timeout_ms: intFlag(values['idle-timeout-ms'], 'idle-timeout-ms', INFERENCE_USAGE),
          responses_api: boolFlag(values['responses-api']),
        }).filter(([, v]) => v !== undefined),
      );
      if (Object.keys(body).length === 0) throw new UsageError('nothing to change', INFERENCE_USAGE);
      printObject(ctx, await api(ctx).PATCH('/inference/targets/{target_id}', { params: { target_id: positionals[0] }, body }), TARGET_FIELDS);
      return 0;
    }
    case 'delete': {
      const { positionals } = parseCommand(rest, {}, INFERENCE_USAGE, { min: 1, max: 1 });
      await api(ctx).DELETE('/inference/targets/{target_id}', { params: { target_id: positionals[0] } });
      printDone(ctx, `Deleted inference target ${positionals[0]}.`);
      return 0;
    }
    default:
      throw new UsageError(command === undefined ? 'missing targets command' : `unknown targets command "${command}"`, INFERENCE_USAGE);
  }
}

async function runManaged(ctx: Context, command: string | undefined, rest: string[]): Promise<number> {
  switch (command) {
    case 'list': {
      const { values } = parseCommand(rest, pageFlags, INFERENCE_USAGE, { min: 0, max: 0 });
      const query = { ...pageQuery(values, INFERENCE_USAGE), org_id: ctx.org ?? undefined, project_id: ctx.project ?? undefined };
      printList(ctx, await api(ctx).GET('/inference/managed-models', { query }), MANAGED_COLUMNS, 'managed models');
      return 0;
    }
    case 'add': {
      const flags = {
        target: { type: 'string' },
        'upstream-model': { type: 'string' },
        description: { type: 'string' },
        projects: { type: 'string' },
        system: { type: 'boolean' },
        'input-price': { type: 'string' },
        'output-price': { type: 'string' },
        'cache-read-price': { type: 'string' },
        'cache-write-price': { type: 'string' },
        'reasoning-price': { type: 'string' },
      } as const;
      const { values, positionals } = parseCommand(rest, flags, INFERENCE_USAGE, { min: 1, max: 1 });
      const prices = Object.fromEntries(
        Object.entries({
          input: numberFlag(values['input-price'], 'input-price'),
          output: numberFlag(values['output-price'], 'output-price'),
          cache_read: numberFlag(values['cache-read-price'], 'cache-read-price'),
          cache_write: numberFlag(values['cache-write-price'], 'cache-write-price'),
          reasoning: numberFlag(values['reasoning-price'], 'reasoning-price'),
        }).filter(([, v]) => v !== undefined),
      );
      const body = {
        org_id: scopeOf(ctx, values.system),
        name: positionals[0],
        target_id: requireFlag(values.target, 'target', INFERENCE_USAGE),
        upstream_model: requireFlag(values['upstream-model'], 'upstream-model', INFERENCE_USAGE),
        description: values.description,
        prices: Object.keys(prices).length ? prices : undefined,
        project_ids: list(values.projects),
      };
      const created = await api(ctx).POST('/inference/managed-models', { body });
      printObject(ctx, created, ['canonical_model_id', 'id', 'scope', 'org_id', 'target', 'upstream_model', 'prices', 'currency', 'project_ids', 'created_at']);
      return 0;
    }
    case 'delete': {
      const { values, positionals } = parseCommand(rest, { system: { type: 'boolean' } }, INFERENCE_USAGE, { min: 1, max: 1 });
      const org = scopeOf(ctx, values.system);
      const name = positionals[0].replace(/^managed\//, '');
      await api(ctx).DELETE('/inference/managed-models/{canonical_model_id}', { params: { canonical_model_id: name }, query: { org_id: org ?? undefined } });
      printDone(ctx, `Deleted managed/${name}.`);
      return 0;
    }
    default:
      throw new UsageError(command === undefined ? 'missing managed command' : `unknown managed command "${command}"`, INFERENCE_USAGE);
  }
}

export async function runInference(ctx: Context, args: string[]): Promise<number> {
  const [group, command, ...rest] = args;
  if (group === 'targets') return runTargets(ctx, command, rest);
  if (group === 'managed') return runManaged(ctx, command, rest);
  throw new UsageError(group === undefined ? 'missing inference command' : `unknown inference command "${group}"`, INFERENCE_USAGE);
}

export async function runModels(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  if (command !== 'list') throw new UsageError(command === undefined ? 'missing models command' : `unknown models command "${command}"`, MODELS_USAGE);
  const { values } = parseCommand(rest, { source: { type: 'string' }, ...pageFlags }, MODELS_USAGE, { min: 0, max: 0 });
  const query = { ...pageQuery(values, MODELS_USAGE), source: values.source, org_id: ctx.org ?? undefined, project_id: ctx.project ?? undefined };
  printList(ctx, await api(ctx).GET('/models', { query }), MODEL_COLUMNS, 'models');
  return 0;
}
