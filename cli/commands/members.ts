import { intFlag, parseCommand, requireFlag } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Schemas } from '../../client/index.ts';
import { api } from '../http.ts';
import { printDone, printList, printObject } from '../output.ts';

/** What differs between org and project membership commands. */
export interface MembersTarget {
  /** "org" or "project": used in messages and flag names (--org / --project). */
  kind: 'org' | 'project';
  /** --org / --project, else the profile's default. */
  defaultId?: string;
  usage: string;
}

export const DEFAULT_MEMBER_ROLE = 'member';

type Role = NonNullable<Schemas['AddMember']['role']>;

/** The membership calls of one org or project. */
function membersOf(ctx: Context, kind: MembersTarget['kind'], id: string) {
  const svc = api(ctx);
  if (kind === 'org') {
    const org_id = id;
    return {
      list: (query: { limit?: number; offset?: number }) => svc.GET('/orgs/{org_id}/members', { params: { org_id }, query }),
      add: (body: Schemas['AddMember']) => svc.POST('/orgs/{org_id}/members', { params: { org_id }, body }),
      setRole: (user_id: string, body: Schemas['SetMemberRole']) => svc.PATCH('/orgs/{org_id}/members/{user_id}', { params: { org_id, user_id }, body }),
      remove: (user_id: string) => svc.DELETE('/orgs/{org_id}/members/{user_id}', { params: { org_id, user_id } }),
    };
  }
  const project_id = id;
  return {
    list: (query: { limit?: number; offset?: number }) => svc.GET('/projects/{project_id}/members', { params: { project_id }, query }),
    add: (body: Schemas['AddMember']) => svc.POST('/projects/{project_id}/members', { params: { project_id }, body }),
    setRole: (user_id: string, body: Schemas['SetMemberRole']) =>
      svc.PATCH('/projects/{project_id}/members/{user_id}', { params: { project_id, user_id }, body }),
    remove: (user_id: string) => svc.DELETE('/projects/{project_id}/members/{user_id}', { params: { project_id, user_id } }),
  };
}

const MEMBER_COLUMNS = [{ key: 'user_id' }, { key: 'email' }, { key: 'display_name', header: 'NAME' }, { key: 'role' }, { key: 'created_at', header: 'ADDED' }];

/**
 * `<kind> members list [ID]`, `add [ID] --email E [--role R]`, `set-role [ID] USER_ID --role R`,
 * `remove [ID] USER_ID`. ID may be left out when --org/--project or the profile supplies it.
 */
export async function runMembers(ctx: Context, target: MembersTarget, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const { usage } = target;
  // The owner's ID is optional, so each command takes one more positional than it needs.
  const split = (positionals: string[], needed: number): [string, string[]] => {
    if (positionals.length > needed) return [positionals[0], positionals.slice(1)];
    if (!target.defaultId) {
      throw new UsageError(`missing ${target.kind} ID (pass it, or set --${target.kind} / \`svc config set ${target.kind} ID\`)`, usage);
    }
    return [target.defaultId, positionals];
  };
  const members = (id: string) => membersOf(ctx, target.kind, id);

  switch (command) {
    case 'list': {
      const options = { limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values, positionals } = parseCommand(rest, options, usage, { min: 0, max: 1 });
      const [id] = split(positionals, 0);
      const query = { limit: intFlag(values.limit, 'limit', usage), offset: intFlag(values.offset, 'offset', usage) };
      printList(ctx, await members(id).list(query), MEMBER_COLUMNS, 'members');
      return 0;
    }
    case 'add': {
      const options = { email: { type: 'string' }, role: { type: 'string' } } as const;
      const { values, positionals } = parseCommand(rest, options, usage, { min: 0, max: 1 });
      const [id] = split(positionals, 0);
      const body = { email: requireFlag(values.email, 'email', usage), role: (values.role ?? DEFAULT_MEMBER_ROLE) as Role };
      printObject(ctx, await members(id).add(body));
      return 0;
    }
    case 'set-role': {
      const { values, positionals } = parseCommand(rest, { role: { type: 'string' } }, usage, { min: 1, max: 2 });
      const [id, [userId]] = split(positionals, 1);
      const body = { role: requireFlag(values.role, 'role', usage) as Role };
      printObject(ctx, await members(id).setRole(userId, body));
      return 0;
    }
    case 'remove': {
      const { positionals } = parseCommand(rest, {}, usage, { min: 1, max: 2 });
      const [id, [userId]] = split(positionals, 1);
      await members(id).remove(userId);
      printDone(ctx, `Removed member ${userId} from ${target.kind} ${id}.`);
      return 0;
    }
    case undefined:
      throw new UsageError('missing members command (list, add, set-role, remove)', usage);
    default:
      throw new UsageError(`unknown members command "${command}"`, usage);
  }
}
