import { intFlag } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import {} from '../http.ts';
import { cell, printObject } from '../output.ts';

export const ACCESS_USAGE = `usage: svc access <command> [flags]

  roles list [--limit N] [--offset N]
  roles create --name N --permissions a,b [--scope org|project] [--description D]   (default scope: org)
  roles get ROLE_ID
  roles update ROLE_ID [--permissions a,b] [--description D]
  roles delete ROLE_ID                 refused (409) while a binding uses it

  bindings list [--principal-type user|service_account|group] [--principal-id ID] [--project ID] [--limit N] [--offset N]
  bindings create --role ROLE (--user ID | --service-account ID | --group ID) [--project ID]
                                       ROLE: owner, admin, member or a custom role ID; without --project: org-wide
  bindings delete BINDING_ID

  groups list [--limit N] [--offset N]
  groups create NAME [--description D]
  groups get GROUP_ID
  groups delete GROUP_ID               also removes its memberships and the bindings made to it
  groups members GROUP_ID [--limit N] [--offset N]
  groups add-member GROUP_ID (--user ID | --service-account ID)
  groups remove-member GROUP_ID (--user ID | --service-account ID)

  can (--user ID | --service-account ID | --group ID) (--permission P | --resource-type T --action A [--resource R]) [--project ID]
                                       prints allowed or denied; exit 0 when allowed, 1 when denied
                                       (a failed request also exits 1, with svc: on stderr: scripts fail closed)
  explain <same flags as can>          prints the answer, the reason and the sources table; exit 0 either way

Resource types: orgfs, orgdocs, envdb. Actions: read, write, admin.
The org is --org, else the profile's org. --project here is the flag only: the profile's default
project is not applied, so bindings and checks stay org-wide unless you name a project.

Examples:
  svc access roles create --name deployer --permissions jobs:read,jobs:write --scope project
  svc access bindings create --role deployer --user USER_ID --project PROJECT_ID
  svc access can --user USER_ID --permission jobs:write --project PROJECT_ID`;

export type PrincipalType = 'user' | 'service_account' | 'group';

/** The org from --org or the profile; a clear usage error when neither names one. */
export function orgIdOf(ctx: Context, usage: string): string {
  if (!ctx.org) throw new UsageError('missing org: pass --org ID or set a default with `svc config set org ID`', usage);
  return ctx.org;
}

/** The --project flag itself (not the profile's default project). */
export const projectFlag = (ctx: Context): string | undefined => ctx.flags.project;

export const principalOptions = { user: { type: 'string' }, 'service-account': { type: 'string' }, group: { type: 'string' } } as const;

const FLAG_OF: Record<PrincipalType, string> = { user: 'user', service_account: 'service-account', group: 'group' };

/** Exactly one of --user / --service-account / --group (those in `allowed`). */
export function principalOf(
  values: { user?: string; 'service-account'?: string; group?: string },
  usage: string,
  allowed: PrincipalType[] = ['user', 'service_account', 'group'],
): { principal_type: PrincipalType; principal_id: string } {
  const given = allowed.flatMap((type) => {
    const id = values[FLAG_OF[type] as keyof typeof values];
    return id === undefined ? [] : [{ principal_type: type, principal_id: id }];
  });
  const names = allowed.map((type) => `--${FLAG_OF[type]} ID`).join(' | ');
  if (given.length !== 1) throw new UsageError(`pass exactly one of ${names}`, usage);
  if (given[0].principal_id === '') throw new UsageError(`--${FLAG_OF[given[0].principal_type]} needs a value`, usage);
  return given[0];
}

/** `a,b, c` → ['a', 'b', 'c']; an empty list is a usage error. */
export function csvFlag(value: string | undefined, name: string, usage: string): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (items.length === 0) throw new UsageError(`--${name} needs at least one value`, usage);
  return items;
}

export const listOptions = { limit: { type: 'string' }, offset: { type: 'string' } } as const;

export const listQuery = (values: { limit?: string; offset?: string }, usage: string) => ({
  limit: intFlag(values.limit, 'limit', usage),
  offset: intFlag(values.offset, 'offset', usage),
});

/** Arrays as `a, b` in tables and key: value output. */
export const joined = (value: unknown): string => (Array.isArray(value) ? (value.length ? value.join(', ') : '-') : cell(value));

/** printObject, with array fields joined for people (--json prints the body untouched). */
export function printRecord(ctx: Context, body: unknown, keys: string[]): void {
  if (ctx.json) return printObject(ctx, body);
  const record = (body ?? {}) as Record<string, unknown>;
  const flat = Object.fromEntries(keys.map((k) => [k, Array.isArray(record[k]) ? joined(record[k]) : record[k]]));
  printObject(ctx, flat, keys);
}
