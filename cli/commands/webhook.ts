/** `svc webhook …`: outbound webhook subscriptions, their deliveries, test sends and replays (docs/webhooks.md). */
import { readFileSync } from 'node:fs';
import { intFlag, jsonObjectFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { CliError, UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { printDone, printList, type Column } from '../output.ts';
import { csvFlag, joined, listOptions, listQuery, orgIdOf, printRecord, projectFlag } from './access-common.ts';

export const WEBHOOK_USAGE = `usage: svc webhook <command> [flags]

  create --url URL --events a,b (--secret S | --secret-file F) [--filter JSON] [--disabled] [--project ID]
                           org-wide, or with --project for that project's events only.
                           events: exact types or patterns (system.job.*, *.failed, *);
                           filter: {"project_id": "...", "agent": "coder*"}. The secret (16-256
                           characters) signs every delivery and is never shown again
  list [--project ID] [--enabled true|false] [--limit N] [--offset N]
  show WH_ID
  delete WH_ID
  enable WH_ID             also after it was disabled by 10 failed deliveries in a row
  deliveries WH_ID [--status pending|retrying|succeeded|failed] [--limit N] [--offset N]
  test WH_ID               sends a webhook.test event now; exit 1 unless the receiver answered 2xx
  replay WH_ID --from-event EVT_ID [--to ISO_TIME] [--max-events N] [--dry-run]
                           re-send the events from EVT_ID (inclusive) to --to (default now), at most
                           N (default 5000, up to 10000); events already delivered are skipped
  replay WH_ID RPL_ID      a replay's progress

The org is --org, else the profile's org. --project here is the flag only.

Examples:
  svc webhook create --url https://hooks.example.com/svc --events "system.job.*" --secret-file hook.secret
  svc webhook deliveries WH_ID --status failed`;

const WEBHOOK_FIELDS = ['id', 'url', 'events', 'filter', 'project_id', 'enabled', 'consecutive_failures', 'disabled_at', 'disabled_reason', 'created_at'];
const WEBHOOK_COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'url' },
  { key: 'events', format: joined },
  { key: 'project_id', header: 'SCOPE', format: (v) => (v ? String(v) : 'org') },
  { key: 'enabled' },
  { key: 'consecutive_failures', header: 'FAILURES' },
];
const DELIVERY_FIELDS = [
  'id',
  'event_id',
  'event_type',
  'kind',
  'status',
  'attempts',
  'response_status',
  'response_body',
  'error',
  'duration_ms',
  'next_attempt_at',
  'completed_at',
];
const DELIVERY_COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'event_type', header: 'EVENT' },
  { key: 'kind' },
  { key: 'status' },
  { key: 'attempts' },
  { key: 'response_status', header: 'HTTP' },
  { key: 'next_attempt_at', header: 'NEXT' },
  { key: 'created_at', header: 'CREATED' },
];
const REPLAY_FIELDS = [
  'id',
  'status',
  'dry_run',
  'from_event',
  'to',
  'max_events',
  'events_matched',
  'events_enqueued',
  'events_skipped',
  'progress',
  'completed_at',
];

function secretOf(values: { secret?: string; 'secret-file'?: string }): string {
  if ((values.secret === undefined) === (values['secret-file'] === undefined))
    throw new UsageError('pass exactly one of --secret or --secret-file', WEBHOOK_USAGE);
  if (values.secret !== undefined) return values.secret;
  try {
    return readFileSync(values['secret-file']!, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new CliError(`cannot read ${values['secret-file']}: ${(error as Error).message}`);
  }
}

function booleanFlag(value: string | undefined, name: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') throw new UsageError(`--${name} must be true or false`, WEBHOOK_USAGE);
  return value === 'true';
}

export async function runWebhook(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'create': {
      const options = {
        url: { type: 'string' },
        events: { type: 'string' },
        secret: { type: 'string' },
        'secret-file': { type: 'string' },
        filter: { type: 'string' },
        disabled: { type: 'boolean' },
      } as const;
      const { values } = parseCommand(rest, options, WEBHOOK_USAGE, { min: 0, max: 0 });
      if (!values.url) throw new UsageError('--url is required', WEBHOOK_USAGE);
      const body = {
        url: values.url,
        events: csvFlag(values.events, 'events', WEBHOOK_USAGE) ?? ['*'],
        filter: jsonObjectFlag(values.filter, '--filter', WEBHOOK_USAGE),
        secret: secretOf(values),
        enabled: values.disabled ? false : undefined,
      };
      const project = projectFlag(ctx);
      const created = project
        ? await api(ctx).POST('/projects/{project_id}/webhooks', { params: { project_id: project }, body })
        : await api(ctx).POST('/orgs/{org_id}/webhooks', { params: { org_id: orgIdOf(ctx, WEBHOOK_USAGE) }, body });
      printRecord(ctx, created, WEBHOOK_FIELDS);
      return 0;
    }
    case 'list': {
      const { values } = parseCommand(rest, { ...listOptions, enabled: { type: 'string' } }, WEBHOOK_USAGE, { min: 0, max: 0 });
      const query = { ...listQuery(values, WEBHOOK_USAGE), project_id: projectFlag(ctx), enabled: booleanFlag(values.enabled, 'enabled') };
      printList(ctx, await api(ctx).GET('/orgs/{org_id}/webhooks', { params: { org_id: orgIdOf(ctx, WEBHOOK_USAGE) }, query }), WEBHOOK_COLUMNS, 'webhooks');
      return 0;
    }
    case 'show':
    case 'enable': {
      const { positionals } = parseCommand(rest, {}, WEBHOOK_USAGE, { min: 1, max: 1 });
      const body =
        command === 'show'
          ? await api(ctx).GET('/orgs/{org_id}/webhooks/{wh_id}', { params: { org_id: orgIdOf(ctx, WEBHOOK_USAGE), wh_id: positionals[0] } })
          : await api(ctx).PATCH('/orgs/{org_id}/webhooks/{wh_id}/enable', {
              params: { org_id: orgIdOf(ctx, WEBHOOK_USAGE), wh_id: positionals[0] },
              body: {},
            });
      printRecord(ctx, body, WEBHOOK_FIELDS);
      return 0;
    }
    case 'delete': {
      const { positionals } = parseCommand(rest, {}, WEBHOOK_USAGE, { min: 1, max: 1 });
      await api(ctx).DELETE('/orgs/{org_id}/webhooks/{wh_id}', { params: { org_id: orgIdOf(ctx, WEBHOOK_USAGE), wh_id: positionals[0] } });
      printDone(ctx, `Deleted webhook ${positionals[0]}.`);
      return 0;
    }
    case 'deliveries': {
      const { values, positionals } = parseCommand(rest, { ...listOptions, status: { type: 'string' } }, WEBHOOK_USAGE, { min: 1, max: 1 });
      const query = { ...listQuery(values, WEBHOOK_USAGE), status: values.status };
      printList(
        ctx,
        await api(ctx).GET('/orgs/{org_id}/webhooks/{wh_id}/deliveries', { params: { org_id: orgIdOf(ctx, WEBHOOK_USAGE), wh_id: positionals[0] }, query }),
        DELIVERY_COLUMNS,
        'deliveries',
      );
      return 0;
    }
    case 'test': {
      const { positionals } = parseCommand(rest, {}, WEBHOOK_USAGE, { min: 1, max: 1 });
      const delivery = await api(ctx).POST('/orgs/{org_id}/webhooks/{wh_id}/test', {
        params: { org_id: orgIdOf(ctx, WEBHOOK_USAGE), wh_id: positionals[0] },
        body: {},
      });
      printRecord(ctx, delivery, DELIVERY_FIELDS);
      return delivery.status === 'succeeded' ? 0 : 1;
    }
    case 'replay': {
      const options = { 'from-event': { type: 'string' }, to: { type: 'string' }, 'max-events': { type: 'string' }, 'dry-run': { type: 'boolean' } } as const;
      const { values, positionals } = parseCommand(rest, options, WEBHOOK_USAGE, { min: 1, max: 2 });
      if (positionals.length === 2) {
        printRecord(
          ctx,
          await api(ctx).GET('/orgs/{org_id}/webhooks/{wh_id}/replays/{replay_id}', {
            params: { org_id: orgIdOf(ctx, WEBHOOK_USAGE), wh_id: positionals[0], replay_id: positionals[1] },
          }),
          REPLAY_FIELDS,
        );
        return 0;
      }
      if (!values['from-event']) throw new UsageError('--from-event is required', WEBHOOK_USAGE);
      const body = {
        from_event: values['from-event'],
        to: values.to,
        max_events: intFlag(values['max-events'], 'max-events', WEBHOOK_USAGE),
        dry_run: values['dry-run'],
      };
      printRecord(
        ctx,
        await api(ctx).POST('/orgs/{org_id}/webhooks/{wh_id}/replays', { params: { org_id: orgIdOf(ctx, WEBHOOK_USAGE), wh_id: positionals[0] }, body }),
        REPLAY_FIELDS,
      );
      return 0;
    }
    case undefined:
      throw new UsageError('missing webhook command', WEBHOOK_USAGE);
    default:
      throw new UsageError(`unknown webhook command "${command}"`, WEBHOOK_USAGE);
  }
}
