import { parseCommand, requireFlag } from '../args.ts';
import type { Schemas } from '../../client/index.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { printDone, printList, type Column } from '../output.ts';
import {
  ACCESS_USAGE as USAGE,
  csvFlag,
  joined,
  listOptions,
  listQuery,
  orgIdOf,
  principalOf,
  principalOptions,
  printRecord,
  projectFlag,
} from './access-common.ts';

type Permission = Schemas['CreateAccessRole']['permissions'][number];

const ROLE_FIELDS = ['id', 'name', 'scope', 'permissions', 'description', 'created_at', 'updated_at'];
const ROLE_COLUMNS: Column[] = [{ key: 'id' }, { key: 'name' }, { key: 'scope' }, { key: 'permissions', format: joined }, { key: 'description' }];
const BINDING_FIELDS = ['id', 'role', 'principal_type', 'principal_id', 'project_id', 'created_at'];
const BINDING_COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'role' },
  { key: 'principal_type', header: 'PRINCIPAL' },
  { key: 'principal_id', header: 'PRINCIPAL_ID' },
  { key: 'project_id', header: 'PROJECT', format: (v) => (v ? String(v) : '(org-wide)') },
  { key: 'created_at', header: 'CREATED' },
];
const PRINCIPAL_TYPES = ['user', 'service_account', 'group'];

/** `svc access roles …` */
export async function runRoles(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'list': {
      const { values } = parseCommand(rest, listOptions, USAGE, { min: 0, max: 0 });
      const body = await api(ctx).GET('/orgs/{org_id}/access/roles', { params: { org_id: orgIdOf(ctx, USAGE) }, query: listQuery(values, USAGE) });
      printList(ctx, body, ROLE_COLUMNS, 'roles');
      return 0;
    }
    case 'create': {
      const options = { name: { type: 'string' }, permissions: { type: 'string' }, scope: { type: 'string' }, description: { type: 'string' } } as const;
      const { values } = parseCommand(rest, options, USAGE, { min: 0, max: 0 });
      const body = {
        name: requireFlag(values.name, 'name', USAGE),
        permissions: csvFlag(requireFlag(values.permissions, 'permissions', USAGE), 'permissions', USAGE) as Permission[],
        scope: values.scope as Schemas['CreateAccessRole']['scope'],
        description: values.description,
      };
      if (body.scope !== undefined && body.scope !== 'org' && body.scope !== 'project') {
        throw new UsageError(`--scope must be org or project, got "${body.scope}"`, USAGE);
      }
      printRecord(ctx, await api(ctx).POST('/orgs/{org_id}/access/roles', { params: { org_id: orgIdOf(ctx, USAGE) }, body }), ROLE_FIELDS);
      return 0;
    }
    case 'get': {
      const { positionals } = parseCommand(rest, {}, USAGE, { min: 1, max: 1 });
      printRecord(
        ctx,
        await api(ctx).GET('/orgs/{org_id}/access/roles/{role_id}', { params: { org_id: orgIdOf(ctx, USAGE), role_id: positionals[0] } }),
        ROLE_FIELDS,
      );
      return 0;
    }
    case 'update': {
      const options = { permissions: { type: 'string' }, description: { type: 'string' } } as const;
      const { values, positionals } = parseCommand(rest, options, USAGE, { min: 1, max: 1 });
      const body = { permissions: csvFlag(values.permissions, 'permissions', USAGE) as Permission[] | undefined, description: values.description };
      if (body.permissions === undefined && body.description === undefined) {
        throw new UsageError('nothing to update: pass --permissions or --description', USAGE);
      }
      printRecord(
        ctx,
        await api(ctx).PATCH('/orgs/{org_id}/access/roles/{role_id}', { params: { org_id: orgIdOf(ctx, USAGE), role_id: positionals[0] }, body }),
        ROLE_FIELDS,
      );
      return 0;
    }
    case 'delete': {
      const { positionals } = parseCommand(rest, {}, USAGE, { min: 1, max: 1 });
      await api(ctx).DELETE('/orgs/{org_id}/access/roles/{role_id}', { params: { org_id: orgIdOf(ctx, USAGE), role_id: positionals[0] } });
      printDone(ctx, `Deleted role ${positionals[0]}.`);
      return 0;
    }
    case undefined:
      throw new UsageError('missing roles command (list, create, get, update, delete)', USAGE);
    default:
      throw new UsageError(`unknown roles command "${command}"`, USAGE);
  }
}

/** `svc access bindings …` */
export async function runBindings(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'list': {
      const options = { ...listOptions, 'principal-type': { type: 'string' }, 'principal-id': { type: 'string' } } as const;
      const { values } = parseCommand(rest, options, USAGE, { min: 0, max: 0 });
      const type = values['principal-type'];
      if (type !== undefined && !PRINCIPAL_TYPES.includes(type)) {
        throw new UsageError(`--principal-type must be one of ${PRINCIPAL_TYPES.join(', ')}, got "${type}"`, USAGE);
      }
      const query = { ...listQuery(values, USAGE), principal_type: type, principal_id: values['principal-id'], project_id: projectFlag(ctx) };
      printList(ctx, await api(ctx).GET('/orgs/{org_id}/access/bindings', { params: { org_id: orgIdOf(ctx, USAGE) }, query }), BINDING_COLUMNS, 'bindings');
      return 0;
    }
    case 'create': {
      const { values } = parseCommand(rest, { role: { type: 'string' }, ...principalOptions }, USAGE, { min: 0, max: 0 });
      const role = requireFlag(values.role, 'role', USAGE);
      const body = { role, ...principalOf(values, USAGE), project_id: projectFlag(ctx) };
      printRecord(ctx, await api(ctx).POST('/orgs/{org_id}/access/bindings', { params: { org_id: orgIdOf(ctx, USAGE) }, body }), BINDING_FIELDS);
      return 0;
    }
    case 'delete': {
      const { positionals } = parseCommand(rest, {}, USAGE, { min: 1, max: 1 });
      await api(ctx).DELETE('/orgs/{org_id}/access/bindings/{binding_id}', { params: { org_id: orgIdOf(ctx, USAGE), binding_id: positionals[0] } });
      printDone(ctx, `Deleted binding ${positionals[0]}.`);
      return 0;
    }
    case undefined:
      throw new UsageError('missing bindings command (list, create, delete)', USAGE);
    default:
      throw new UsageError(`unknown bindings command "${command}"`, USAGE);
  }
}
