/** `svc event create | list | show`: the event spine over the API in docs/events.md. */
import { intFlag, jsonObjectFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Schemas } from '../../client/index.ts';
import { api } from '../http.ts';

type EventRequest = Schemas['EventRequest'];
import { formatFields, printJson, printList, write, type Column } from '../output.ts';
import { requireProject } from './manifest.ts';

export const EVENT_USAGE = `usage: svc event <command> [flags]

  create TYPE [--payload JSON] [--source S] [--env NAME] [--branch B] [--sha SHA] [--dedupe-key K]
         [--actor-type user|system|app] [--actor-id ID] [--mutation-id ID] [--request-id ID]
                                  emit an event (pending until the orchestrator routes it to the
                                  manifest's triggers); source defaults to manual; a dedupe key the
                                  project has seen returns the earlier event
  list [--type T] [--source S] [--status S] [--all] [--limit N] [--offset N]
                                  events, newest first; --all: every project of the org (--org)
  show EVENT_ID                   one event and its routing: which triggers matched (and what they
                                  started) and why the others did not

The project comes from --project, else the profile's project.

Examples:
  svc event create deploy.requested --payload '{"env": "staging"}'
  svc event show EVENT_ID`;

interface Decision {
  kind: string;
  name: string;
  trigger?: string;
  reason?: string;
  run_id?: string;
  job_id?: string;
  error?: string;
}

interface Event {
  id: string;
  routing: { manifest_hash: string | null; matched: Decision[]; not_matched: Decision[] } | null;
  [key: string]: unknown;
}

const FIELDS = [
  'id',
  'project_id',
  'type',
  'source',
  'status',
  'error',
  'env_name',
  'ref_branch',
  'ref_sha',
  'actor_type',
  'actor_id',
  'dedupe_key',
  'mutation_id',
  'request_id',
  'created_at',
  'updated_at',
];
const COLUMNS: Column[] = [{ key: 'id' }, { key: 'type' }, { key: 'source' }, { key: 'status' }, { key: 'created_at', header: 'CREATED' }];

/** The event's fields, its payload, then one line per trigger decision. */
export function formatEvent(event: Event): string {
  const record = event as Record<string, unknown>;
  const lines = [formatFields(FIELDS.filter((key) => key in record).map((key) => [key, record[key]])), `payload: ${JSON.stringify(record.payload_json ?? {})}`];
  if (!event.routing) return [...lines, 'routing: not routed yet'].join('\n');
  lines.push(`routing (manifest ${event.routing.manifest_hash ?? 'none'}):`);
  for (const m of event.routing.matched) {
    const started = m.error ? `failed to start: ${m.error}` : `started ${m.run_id ?? m.job_id}`;
    lines.push(`  matched  ${m.kind} ${m.name} (${m.trigger}): ${started}`);
  }
  for (const d of event.routing.not_matched) lines.push(`  skipped  ${d.kind} ${d.name}: ${d.reason}`);
  if (event.routing.matched.length + event.routing.not_matched.length === 0) lines.push('  no triggers');
  return lines.join('\n');
}

const show = (ctx: Context, event: Event) => (ctx.json ? printJson(event) : write(formatEvent(event)));

const CREATE_OPTIONS = {
  payload: { type: 'string' },
  source: { type: 'string' },
  env: { type: 'string' },
  branch: { type: 'string' },
  sha: { type: 'string' },
  'dedupe-key': { type: 'string' },
  'actor-type': { type: 'string' },
  'actor-id': { type: 'string' },
  'mutation-id': { type: 'string' },
  'request-id': { type: 'string' },
} as const;

export async function runEvent(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const project = () => requireProject(ctx, EVENT_USAGE);
  switch (command) {
    case 'create': {
      const { values: v, positionals } = parseCommand(rest, CREATE_OPTIONS, EVENT_USAGE, { min: 1, max: 1 });
      const body = {
        type: positionals[0],
        payload: jsonObjectFlag(v.payload, '--payload', EVENT_USAGE),
        source: v.source as EventRequest['source'],
        env_name: v.env,
        ref_branch: v.branch,
        ref_sha: v.sha,
        dedupe_key: v['dedupe-key'],
        actor_type: v['actor-type'] as EventRequest['actor_type'],
        actor_id: v['actor-id'],
        mutation_id: v['mutation-id'],
        request_id: v['request-id'],
      };
      show(ctx, await api(ctx).POST('/projects/{project_id}/events', { params: { project_id: project() }, body }));
      return 0;
    }
    case 'list': {
      const options = {
        type: { type: 'string' },
        source: { type: 'string' },
        status: { type: 'string' },
        all: { type: 'boolean' },
        limit: { type: 'string' },
        offset: { type: 'string' },
      } as const;
      const { values: v } = parseCommand(rest, options, EVENT_USAGE, { min: 0, max: 0 });
      if (v.all && !ctx.org) throw new UsageError('--all needs an org (--org ID or `svc config set org ID`)', EVENT_USAGE);
      const query = {
        type: v.type,
        source: v.source as EventRequest['source'],
        status: v.status as Schemas['Event']['status'],
        limit: intFlag(v.limit, 'limit', EVENT_USAGE),
        offset: intFlag(v.offset, 'offset', EVENT_USAGE),
      };
      const columns = v.all ? [...COLUMNS.slice(0, 1), { key: 'project_id', header: 'PROJECT' }, ...COLUMNS.slice(1)] : COLUMNS;
      printList(
        ctx,
        v.all
          ? await api(ctx).GET('/orgs/{org_id}/events', { params: { org_id: ctx.org! }, query })
          : await api(ctx).GET('/projects/{project_id}/events', { params: { project_id: project() }, query }),
        columns,
        'events',
      );
      return 0;
    }
    case 'show': {
      const { positionals } = parseCommand(rest, {}, EVENT_USAGE, { min: 1, max: 1 });
      show(ctx, await api(ctx).GET('/projects/{project_id}/events/{event_id}', { params: { project_id: project(), event_id: positionals[0] } }));
      return 0;
    }
    default:
      throw new UsageError(command === undefined ? 'missing event command' : `unknown event command "${command}"`, EVENT_USAGE);
  }
}
