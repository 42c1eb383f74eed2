/** `svc schedule list | create | update | delete`: project schedules (cron expressions that emit events). */
import { intFlag, jsonObjectFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { printDone, printList, printObject, type Column } from '../output.ts';
import { requireProject } from './manifest.ts';

export const SCHEDULE_USAGE = `usage: svc schedule <command> [flags]

  list [--enabled | --disabled] [--limit N] [--offset N]
                                  the project's schedules, newest first
  create --cron EXPR [--type T] [--payload JSON] [--name N] [--disabled]
                                  emit an event of type T (default cron.tick) with the payload (plus
                                  schedule and schedule_id) whenever EXPR (5 fields, UTC) comes due
  update ID [--cron EXPR] [--type T] [--payload JSON] [--name N] [--enable | --disable]
                                  change a schedule
  delete ID                       delete a schedule

The project comes from --project, else the profile's project.

Examples:
  svc schedule create --cron "0 3 * * *" --type nightly.build --name nightly`;

const FIELDS = ['id', 'name', 'cron', 'event_type', 'payload', 'enabled', 'created_by', 'last_fired_at', 'created_at', 'updated_at'];
const COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'name' },
  { key: 'cron' },
  { key: 'event_type', header: 'EVENT' },
  { key: 'enabled' },
  { key: 'last_fired_at', header: 'LAST FIRED' },
];

/** --enable / --disable (or --enabled / --disabled for list) as one optional boolean. */
function onOff(on: boolean | undefined, off: boolean | undefined, names: [string, string]): boolean | undefined {
  if (on && off) throw new UsageError(`pass --${names[0]} or --${names[1]}, not both`, SCHEDULE_USAGE);
  return on ? true : off ? false : undefined;
}

const EDIT_OPTIONS = { cron: { type: 'string' }, type: { type: 'string' }, payload: { type: 'string' }, name: { type: 'string' } } as const;
const editBody = (v: { cron?: string; type?: string; payload?: string; name?: string }) => ({
  cron: v.cron,
  event_type: v.type,
  payload: jsonObjectFlag(v.payload, '--payload', SCHEDULE_USAGE),
  name: v.name,
});

export async function runSchedule(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'list': {
      const options = { enabled: { type: 'boolean' }, disabled: { type: 'boolean' }, limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values: v } = parseCommand(rest, options, SCHEDULE_USAGE, { min: 0, max: 0 });
      const query = {
        enabled: onOff(v.enabled, v.disabled, ['enabled', 'disabled']),
        limit: intFlag(v.limit, 'limit', SCHEDULE_USAGE),
        offset: intFlag(v.offset, 'offset', SCHEDULE_USAGE),
      };
      printList(
        ctx,
        await api(ctx).GET('/projects/{project_id}/schedules', { params: { project_id: requireProject(ctx, SCHEDULE_USAGE) }, query }),
        COLUMNS,
        'schedules',
      );
      return 0;
    }
    case 'create': {
      const { values: v } = parseCommand(rest, { ...EDIT_OPTIONS, disabled: { type: 'boolean' } }, SCHEDULE_USAGE, { min: 0, max: 0 });
      if (v.cron === undefined) throw new UsageError('--cron is required', SCHEDULE_USAGE);
      const body = { ...editBody(v), cron: v.cron, ...(v.disabled ? { enabled: false } : {}) };
      printObject(ctx, await api(ctx).POST('/projects/{project_id}/schedules', { params: { project_id: requireProject(ctx, SCHEDULE_USAGE) }, body }), FIELDS);
      return 0;
    }
    case 'update': {
      const { values: v, positionals } = parseCommand(rest, { ...EDIT_OPTIONS, enable: { type: 'boolean' }, disable: { type: 'boolean' } }, SCHEDULE_USAGE, {
        min: 1,
        max: 1,
      });
      const body = { ...editBody(v), enabled: onOff(v.enable, v.disable, ['enable', 'disable']) };
      if (Object.values(body).every((value) => value === undefined))
        throw new UsageError('nothing to change: pass --cron, --type, --payload, --name, --enable or --disable', SCHEDULE_USAGE);
      printObject(
        ctx,
        await api(ctx).PATCH('/projects/{project_id}/schedules/{schedule_id}', {
          params: { project_id: requireProject(ctx, SCHEDULE_USAGE), schedule_id: positionals[0] },
          body,
        }),
        FIELDS,
      );
      return 0;
    }
    case 'delete': {
      const { positionals } = parseCommand(rest, {}, SCHEDULE_USAGE, { min: 1, max: 1 });
      await api(ctx).DELETE('/projects/{project_id}/schedules/{schedule_id}', {
        params: { project_id: requireProject(ctx, SCHEDULE_USAGE), schedule_id: positionals[0] },
      });
      printDone(ctx, `schedule ${positionals[0]} deleted`);
      return 0;
    }
    default:
      throw new UsageError(command === undefined ? 'missing schedule command' : `unknown schedule command "${command}"`, SCHEDULE_USAGE);
  }
}
