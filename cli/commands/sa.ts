import { intFlag, parseCommand, requireFlag } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Schemas } from '../../client/index.ts';
import { api } from '../http.ts';
import { note, printDone, printJson, printList, printObject, write, type Column } from '../output.ts';
import { csvFlag, joined, listOptions, listQuery, orgIdOf, projectFlag } from './access-common.ts';

export const SA_USAGE = `usage: svc sa <command> [flags]

  create NAME [--description D] [--role ROLE] [--project ID]
                           with --role the account is bound that role at once (owner, admin,
                           member or a custom role ID), org-wide or, with --project, on that project
  list [--limit N] [--offset N]
  get SA_ID
  delete SA_ID             its tokens, bindings and group memberships go with it
  token mint SA_ID --permissions a,b [--scope org|project] [--ttl-days N] [--name N]
                           prints the token value once (it is not shown again); --json prints the
                           whole response. --scope project uses --project or the profile's project;
                           default scope: the org. TTL 1-90 days (server default: 1)
  token list SA_ID [--limit N] [--offset N]
  token revoke SA_ID TOKEN_ID

The org is --org, else the profile's org. For create, --project is the flag only.
Grant the account permissions first (svc sa create --role, or svc access bindings create
--service-account ID): a token never holds more than its account and its minter.

Examples:
  svc sa create ci-bot --role member
  svc sa token mint SA_ID --permissions jobs:read,jobs:write --ttl-days 30`;

const SA_FIELDS = ['id', 'name', 'description', 'created_at', 'updated_at'];
const SA_COLUMNS: Column[] = [{ key: 'id' }, { key: 'name' }, { key: 'description' }, { key: 'created_at', header: 'CREATED' }];
const scopeText = (value: unknown) => {
  const scope = value as { type?: string; id?: string } | undefined;
  return scope?.type ? `${scope.type}:${scope.id}` : '-';
};
const TOKEN_COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'name' },
  { key: 'scope', format: scopeText },
  { key: 'permissions', format: joined },
  { key: 'expires_at', header: 'EXPIRES' },
  { key: 'revoked_at', header: 'REVOKED' },
];

export async function runSa(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'create': {
      const options = { description: { type: 'string' }, role: { type: 'string' } } as const;
      const { values, positionals } = parseCommand(rest, options, SA_USAGE, { min: 1, max: 1 });
      const project = projectFlag(ctx);
      if (project && !values.role) throw new UsageError('--project only applies with --role', SA_USAGE);
      const body = { name: positionals[0], description: values.description, role: values.role, project_id: project };
      printObject(ctx, await api(ctx).POST('/orgs/{org_id}/service-accounts', { params: { org_id: orgIdOf(ctx, SA_USAGE) }, body }), SA_FIELDS);
      return 0;
    }
    case 'list': {
      const { values } = parseCommand(rest, listOptions, SA_USAGE, { min: 0, max: 0 });
      printList(
        ctx,
        await api(ctx).GET('/orgs/{org_id}/service-accounts', { params: { org_id: orgIdOf(ctx, SA_USAGE) }, query: listQuery(values, SA_USAGE) }),
        SA_COLUMNS,
        'service accounts',
      );
      return 0;
    }
    case 'get': {
      const { positionals } = parseCommand(rest, {}, SA_USAGE, { min: 1, max: 1 });
      printObject(
        ctx,
        await api(ctx).GET('/orgs/{org_id}/service-accounts/{sa_id}', { params: { org_id: orgIdOf(ctx, SA_USAGE), sa_id: positionals[0] } }),
        SA_FIELDS,
      );
      return 0;
    }
    case 'delete': {
      const { positionals } = parseCommand(rest, {}, SA_USAGE, { min: 1, max: 1 });
      await api(ctx).DELETE('/orgs/{org_id}/service-accounts/{sa_id}', { params: { org_id: orgIdOf(ctx, SA_USAGE), sa_id: positionals[0] } });
      printDone(ctx, `Deleted service account ${positionals[0]}.`);
      return 0;
    }
    case 'token':
    case 'tokens':
      return runToken(ctx, rest);
    case undefined:
      throw new UsageError('missing sa command', SA_USAGE);
    default:
      throw new UsageError(`unknown sa command "${command}"`, SA_USAGE);
  }
}

async function runToken(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'mint': {
      const options = { permissions: { type: 'string' }, scope: { type: 'string' }, 'ttl-days': { type: 'string' }, name: { type: 'string' } } as const;
      const { values, positionals } = parseCommand(rest, options, SA_USAGE, { min: 1, max: 1 });
      const org_id = orgIdOf(ctx, SA_USAGE); // checks the org first
      const permissions = csvFlag(
        requireFlag(values.permissions, 'permissions', SA_USAGE),
        'permissions',
        SA_USAGE,
      ) as Schemas['MintServiceAccountToken']['permissions'];
      const ttl = intFlag(values['ttl-days'], 'ttl-days', SA_USAGE);
      if (ttl !== undefined && (ttl < 1 || ttl > 90)) throw new UsageError('--ttl-days must be between 1 and 90', SA_USAGE);
      const body = { permissions, scope: mintScope(ctx, values.scope), ttl_days: ttl, name: values.name };
      const minted = await api(ctx).POST('/orgs/{org_id}/service-accounts/{sa_id}/tokens', { params: { org_id, sa_id: positionals[0] }, body });
      if (ctx.json) {
        printJson(minted);
      } else {
        write(minted.token);
        note(`Token ${minted.id} (${scopeText(minted.scope)}, expires ${minted.expires_at}). Store it now: it is not shown again.`);
      }
      return 0;
    }
    case 'list': {
      const { values, positionals } = parseCommand(rest, listOptions, SA_USAGE, { min: 1, max: 1 });
      const body = await api(ctx).GET('/orgs/{org_id}/service-accounts/{sa_id}/tokens', {
        params: { org_id: orgIdOf(ctx, SA_USAGE), sa_id: positionals[0] },
        query: listQuery(values, SA_USAGE),
      });
      printList(ctx, body, TOKEN_COLUMNS, 'tokens');
      return 0;
    }
    case 'revoke': {
      const { positionals } = parseCommand(rest, {}, SA_USAGE, { min: 2, max: 2 });
      await api(ctx).DELETE('/orgs/{org_id}/service-accounts/{sa_id}/tokens/{token_id}', {
        params: { org_id: orgIdOf(ctx, SA_USAGE), sa_id: positionals[0], token_id: positionals[1] },
      });
      printDone(ctx, `Revoked token ${positionals[1]} of service account ${positionals[0]}.`);
      return 0;
    }
    case undefined:
      throw new UsageError('missing token command (mint, list, revoke)', SA_USAGE);
    default:
      throw new UsageError(`unknown token command "${command}"`, SA_USAGE);
  }
}

/** --scope org → the org; --scope project → --project or the profile's project; none → the server's default (the org). */
function mintScope(ctx: Context, scope: string | undefined): { type: 'org' | 'project'; id: string } | undefined {
  switch (scope) {
    case undefined:
      return undefined;
    case 'org':
      return { type: 'org', id: ctx.org! };
    case 'project':
      if (!ctx.project) throw new UsageError('--scope project needs a project (--project ID or `svc config set project ID`)', SA_USAGE);
      return { type: 'project', id: ctx.project };
    default:
      throw new UsageError(`--scope must be org or project, got "${scope}"`, SA_USAGE);
  }
}
