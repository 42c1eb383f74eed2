import { parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { formatFields, formatTable, printJson, write, type Column } from '../output.ts';
import { ACCESS_USAGE, joined, orgIdOf, principalOf, principalOptions, projectFlag } from './access-common.ts';
import { runGroups } from './access-groups.ts';
import { runBindings, runRoles } from './access-roles.ts';

export { ACCESS_USAGE } from './access-common.ts';

const USAGE = ACCESS_USAGE;
const RESOURCE_TYPES = ['orgfs', 'orgdocs', 'envdb'];
const ACTIONS = ['read', 'write', 'admin'];

const SOURCE_COLUMNS: Column[] = [
  { key: 'kind' },
  { key: 'role', format: (v, row) => cellOr(row.role_name ?? v) },
  { key: 'binding_id', header: 'BINDING' },
  { key: 'project_id', header: 'PROJECT' },
  { key: 'via_group', header: 'VIA_GROUP' },
  { key: 'grants', format: joined },
];
const cellOr = (value: unknown) => (value === undefined || value === null || value === '' ? '-' : String(value));

export async function runAccess(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'roles':
      return runRoles(ctx, rest);
    case 'bindings':
      return runBindings(ctx, rest);
    case 'groups':
      return runGroups(ctx, rest);
    case 'can':
      return can(ctx, rest);
    case 'explain':
      return explain(ctx, rest);
    case undefined:
      throw new UsageError('missing access command', USAGE);
    default:
      throw new UsageError(`unknown access command "${command}"`, USAGE);
  }
}

/** The query of `can` and `explain`, checked here so mistakes are usage errors (exit 2), not 400s. */
function checkQuery(ctx: Context, args: string[]) {
  const options = {
    ...principalOptions,
    permission: { type: 'string' },
    'resource-type': { type: 'string' },
    action: { type: 'string' },
    resource: { type: 'string' },
  } as const;
  const { values } = parseCommand(args, options, USAGE, { min: 0, max: 0 });
  const resourceType = values['resource-type'];
  if (values.permission === undefined && resourceType === undefined) {
    throw new UsageError('pass --permission P, or --resource-type T --action A', USAGE);
  }
  if (resourceType === undefined) {
    if (values.action !== undefined || values.resource !== undefined) throw new UsageError('--action and --resource need --resource-type', USAGE);
  } else {
    if (!RESOURCE_TYPES.includes(resourceType))
      throw new UsageError(`--resource-type must be one of ${RESOURCE_TYPES.join(', ')}, got "${resourceType}"`, USAGE);
    if (values.action === undefined) throw new UsageError('--resource-type needs --action read|write|admin', USAGE);
    if (!ACTIONS.includes(values.action)) throw new UsageError(`--action must be one of ${ACTIONS.join(', ')}, got "${values.action}"`, USAGE);
  }
  return {
    ...principalOf(values, USAGE),
    permission: values.permission,
    project_id: projectFlag(ctx),
    resource_type: resourceType,
    action: values.action,
    resource: values.resource,
  };
}

/** Prints allowed / denied; exit 0 when allowed, 1 when denied. */
async function can(ctx: Context, args: string[]): Promise<number> {
  const query = checkQuery(ctx, args);
  const body = await api(ctx).GET('/orgs/{org_id}/access/can', { params: { org_id: orgIdOf(ctx, USAGE) }, query });
  if (ctx.json) printJson(body);
  else write(body.allowed ? 'allowed' : 'denied');
  return body.allowed ? 0 : 1;
}

/** The answer, why, and each source with what it grants of the required permissions. */
async function explain(ctx: Context, args: string[]): Promise<number> {
  const query = checkQuery(ctx, args);
  const body = await api(ctx).GET('/orgs/{org_id}/access/explain', { params: { org_id: orgIdOf(ctx, USAGE) }, query });
  if (ctx.json) {
    printJson(body);
    return 0;
  }
  const { target } = body;
  const resource = target.resource_type ? `${target.action} on ${target.resource_type}${target.resource ? ` ${target.resource}` : ''}` : undefined;
  const entries: [string, unknown][] = [
    ['answer', body.allowed ? 'allowed' : 'denied'],
    ['principal', `${body.principal.type} ${body.principal.id}`],
    ['target', target.project_id ? `project ${target.project_id} (org ${target.org_id})` : `org ${target.org_id}`],
  ];
  if (resource) entries.push(['resource', resource]);
  entries.push(['required', body.required.join(', ')], ['reason', body.reason]);
  write(formatFields(entries));
  write('');
  write(body.sources.length ? formatTable(body.sources, SOURCE_COLUMNS) : 'No sources.');
  return 0;
}
