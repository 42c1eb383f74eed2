import { parseCommand } from '../args.ts';
import type { Schemas } from '../../client/index.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { printDone, printList, printObject, type Column } from '../output.ts';
import { ACCESS_USAGE as USAGE, listOptions, listQuery, orgIdOf, principalOf } from './access-common.ts';

const GROUP_FIELDS = ['id', 'name', 'description', 'created_at', 'updated_at'];
const GROUP_COLUMNS: Column[] = [{ key: 'id' }, { key: 'name' }, { key: 'description' }, { key: 'created_at', header: 'CREATED' }];
const MEMBER_COLUMNS: Column[] = [
  { key: 'principal_type', header: 'PRINCIPAL' },
  { key: 'principal_id', header: 'PRINCIPAL_ID' },
  { key: 'created_at', header: 'ADDED' },
];
const memberOptions = { user: { type: 'string' }, 'service-account': { type: 'string' } } as const;

/** `svc access groups …` */
export async function runGroups(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'list': {
      const { values } = parseCommand(rest, listOptions, USAGE, { min: 0, max: 0 });
      printList(
        ctx,
        await api(ctx).GET('/orgs/{org_id}/access/groups', { params: { org_id: orgIdOf(ctx, USAGE) }, query: listQuery(values, USAGE) }),
        GROUP_COLUMNS,
        'groups',
      );
      return 0;
    }
    case 'create': {
      const { values, positionals } = parseCommand(rest, { description: { type: 'string' } }, USAGE, { min: 1, max: 1 });
      const body = { name: positionals[0], description: values.description };
      printObject(ctx, await api(ctx).POST('/orgs/{org_id}/access/groups', { params: { org_id: orgIdOf(ctx, USAGE) }, body }), GROUP_FIELDS);
      return 0;
    }
    case 'get': {
      const { positionals } = parseCommand(rest, {}, USAGE, { min: 1, max: 1 });
      printObject(
        ctx,
        await api(ctx).GET('/orgs/{org_id}/access/groups/{group_id}', { params: { org_id: orgIdOf(ctx, USAGE), group_id: positionals[0] } }),
        GROUP_FIELDS,
      );
      return 0;
    }
    case 'delete': {
      const { positionals } = parseCommand(rest, {}, USAGE, { min: 1, max: 1 });
      await api(ctx).DELETE('/orgs/{org_id}/access/groups/{group_id}', { params: { org_id: orgIdOf(ctx, USAGE), group_id: positionals[0] } });
      printDone(ctx, `Deleted group ${positionals[0]}.`);
      return 0;
    }
    case 'members': {
      const { values, positionals } = parseCommand(rest, listOptions, USAGE, { min: 1, max: 1 });
      const body = await api(ctx).GET('/orgs/{org_id}/access/groups/{group_id}/members', {
        params: { org_id: orgIdOf(ctx, USAGE), group_id: positionals[0] },
        query: listQuery(values, USAGE),
      });
      printList(ctx, body, MEMBER_COLUMNS, 'members');
      return 0;
    }
    case 'add-member': {
      const { values, positionals } = parseCommand(rest, memberOptions, USAGE, { min: 1, max: 1 });
      const body = principalOf(values, USAGE, ['user', 'service_account']) as Schemas['AccessGroupMember'];
      printObject(
        ctx,
        await api(ctx).POST('/orgs/{org_id}/access/groups/{group_id}/members', { params: { org_id: orgIdOf(ctx, USAGE), group_id: positionals[0] }, body }),
        ['group_id', 'principal_type', 'principal_id', 'created_at'],
      );
      return 0;
    }
    case 'remove-member': {
      const { values, positionals } = parseCommand(rest, memberOptions, USAGE, { min: 1, max: 1 });
      const { principal_type, principal_id } = principalOf(values, USAGE, ['user', 'service_account']) as Schemas['AccessGroupMember'];
      await api(ctx).DELETE('/orgs/{org_id}/access/groups/{group_id}/members/{principal_type}/{principal_id}', {
        params: { org_id: orgIdOf(ctx, USAGE), group_id: positionals[0], principal_type, principal_id },
      });
      printDone(ctx, `Removed ${principal_type.replace('_', ' ')} ${principal_id} from group ${positionals[0]}.`);
      return 0;
    }
    case undefined:
      throw new UsageError('missing groups command (list, create, get, delete, members, add-member, remove-member)', USAGE);
    default:
      throw new UsageError(`unknown groups command "${command}"`, USAGE);
  }
}
