import { readFileSync } from 'node:fs';
import { intFlag, parseCommand, requireFlag } from '../args.ts';
import type { Context } from '../config.ts';
import { ApiError, CliError, UsageError } from '../errors.ts';
import type { Schemas } from '../../client/index.ts';
import { api } from '../http.ts';
import { printDone, printList, printObject, type Column } from '../output.ts';
import { runRekey } from './secrets-rekey.ts';

export const SECRETS_USAGE = `usage: svc secrets <command> [flags]

  set NAME --scope S [--value V | --from-file F] [--type T] [--shared-with-jobs]
                           create or replace; without --value or --from-file the value is
                           read from stdin (one trailing newline dropped); --value stays in
                           shell history; --shared-with-jobs (system scope) lets jobs resolve it
  share NAME | unshare NAME
                           system scope: let every org's jobs resolve the system secret NAME,
                           or stop them (svc's own integration secrets are never shared)
  list --scope S [--limit N] [--offset N]
  delete NAME --scope S
  rekey --old-key-file F --new-key-file F [--database-url URL]
                           server maintenance: re-encrypt every stored value from the old
                           master key to the new one, in one transaction, straight in the
                           database (DATABASE_URL); stop the servers first, start them on the new key

Scopes: project (--project or the profile's project), org (--org or the profile's org),
        user (yourself), system (system administrator).
Types:  env (default), file, code_host_token, ssh_key.
Values are never shown: the API returns names, types and times only.

Examples:
  svc secrets set OPENAI_API_KEY --scope project < key.txt
  svc secrets list --scope org`;

const SCOPES = ['project', 'org', 'user', 'system'];
const SECRET_FIELDS = ['name', 'type', 'scope', 'shared_with_jobs', 'created_at', 'updated_at'];
const scopeOption = { scope: { type: 'string' } } as const;

type CreateSecret = Schemas['CreateSecret'];
type ReplaceSecret = Schemas['ReplaceSecret'];
type SecretList = Schemas['SecretList'];
type Secret = Schemas['Secret'];

/** The calls on one scope's secrets. */
interface SecretCalls {
  list(query: { limit?: number; offset?: number }): Promise<SecretList>;
  create(body: CreateSecret): Promise<Secret>;
  replace(name: string, body: ReplaceSecret): Promise<Secret>;
  remove(name: string): Promise<unknown>;
}

/** The secrets of the scope the flags name. */
async function secretsOf(ctx: Context, scope: string | undefined): Promise<SecretCalls> {
  const chosen = requireFlag(scope, 'scope', SECRETS_USAGE);
  const svc = api(ctx);
  switch (chosen) {
    case 'project': {
      if (!ctx.project) throw new UsageError('--scope project needs a project (--project ID or `svc config set project ID`)', SECRETS_USAGE);
      const project_id = ctx.project;
      return {
        list: (query) => svc.GET('/projects/{project_id}/secrets', { params: { project_id }, query }),
        create: (body) => svc.POST('/projects/{project_id}/secrets', { params: { project_id }, body }),
        replace: (name, body) => svc.PUT('/projects/{project_id}/secrets/{name}', { params: { project_id, name }, body }),
        remove: (name) => svc.DELETE('/projects/{project_id}/secrets/{name}', { params: { project_id, name } }),
      };
    }
    case 'org': {
      if (!ctx.org) throw new UsageError('--scope org needs an org (--org ID or `svc config set org ID`)', SECRETS_USAGE);
      const org_id = ctx.org;
      return {
        list: (query) => svc.GET('/orgs/{org_id}/secrets', { params: { org_id }, query }),
        create: (body) => svc.POST('/orgs/{org_id}/secrets', { params: { org_id }, body }),
        replace: (name, body) => svc.PUT('/orgs/{org_id}/secrets/{name}', { params: { org_id, name }, body }),
        remove: (name) => svc.DELETE('/orgs/{org_id}/secrets/{name}', { params: { org_id, name } }),
      };
    }
    case 'user': {
      const user_id = (await svc.GET('/auth/me')).user.id;
      return {
        list: (query) => svc.GET('/users/{user_id}/secrets', { params: { user_id }, query }),
        create: (body) => svc.POST('/users/{user_id}/secrets', { params: { user_id }, body }),
        replace: (name, body) => svc.PUT('/users/{user_id}/secrets/{name}', { params: { user_id, name }, body }),
        remove: (name) => svc.DELETE('/users/{user_id}/secrets/{name}', { params: { user_id, name } }),
      };
    }
    case 'system':
      return {
        list: (query) => svc.GET('/system/secrets', { query }),
        create: (body) => svc.POST('/system/secrets', { body }),
        replace: (name, body) => svc.PUT('/system/secrets/{name}', { params: { name }, body }),
        remove: (name) => svc.DELETE('/system/secrets/{name}', { params: { name } }),
      };
    default:
      throw new UsageError(`--scope must be one of ${SCOPES.join(', ')}, got "${chosen}"`, SECRETS_USAGE);
  }
}

async function readValue(values: { value?: string; 'from-file'?: string }): Promise<string> {
  if (values.value !== undefined && values['from-file'] !== undefined) throw new UsageError('pass either --value or --from-file, not both', SECRETS_USAGE);
  if (values.value !== undefined) return values.value;
  if (values['from-file'] !== undefined) {
    try {
      return readFileSync(values['from-file'], 'utf8');
    } catch (error) {
      throw new CliError(`cannot read ${values['from-file']}: ${(error as Error).message}`);
    }
  }
  if (process.stdin.isTTY) throw new UsageError('no value: pass --value or --from-file, or pipe it on stdin', SECRETS_USAGE);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

export async function runSecrets(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'set': {
      const options = {
        ...scopeOption,
        value: { type: 'string' },
        'from-file': { type: 'string' },
        type: { type: 'string' },
        'shared-with-jobs': { type: 'boolean' },
      } as const;
      const { values, positionals } = parseCommand(rest, options, SECRETS_USAGE, { min: 1, max: 1 });
      const secrets = await secretsOf(ctx, values.scope);
      if (values['shared-with-jobs'] && values.scope !== 'system')
        throw new UsageError('--shared-with-jobs is for system secrets (--scope system)', SECRETS_USAGE);
      const value = await readValue(values);
      if (value === '') throw new UsageError('the value is empty', SECRETS_USAGE);
      const name = positionals[0];
      const shared = values['shared-with-jobs'] ? { shared_with_jobs: true } : {};
      let body: unknown;
      try {
        body = await secrets.create({ name, value, type: values.type as CreateSecret['type'], ...shared });
      } catch (error) {
        if (!(error instanceof ApiError) || error.statusCode !== 409) throw error;
        body = await secrets.replace(name, { value, type: values.type as ReplaceSecret['type'], ...shared });
      }
      printObject(ctx, body, SECRET_FIELDS);
      return 0;
    }
    case 'list': {
      const options = { ...scopeOption, limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values } = parseCommand(rest, options, SECRETS_USAGE, { min: 0, max: 0 });
      const query = { limit: intFlag(values.limit, 'limit', SECRETS_USAGE), offset: intFlag(values.offset, 'offset', SECRETS_USAGE) };
      const columns: Column[] = [{ key: 'name' }, { key: 'type' }, { key: 'scope' }, { key: 'updated_at', header: 'UPDATED' }];
      printList(ctx, await (await secretsOf(ctx, values.scope)).list(query), columns, 'secrets');
      return 0;
    }
    case 'delete': {
      const { values, positionals } = parseCommand(rest, scopeOption, SECRETS_USAGE, { min: 1, max: 1 });
      await (await secretsOf(ctx, values.scope)).remove(positionals[0]);
      printDone(ctx, `Deleted ${values.scope} secret ${positionals[0]}.`);
      return 0;
    }
    case 'share':
    case 'unshare': {
      const { positionals } = parseCommand(rest, {}, SECRETS_USAGE, { min: 1, max: 1 });
      const body = { shared_with_jobs: command === 'share' };
      printObject(ctx, await api(ctx).PUT('/system/secrets/{name}', { params: { name: positionals[0] }, body }), SECRET_FIELDS);
      return 0;
    }
    case 'rekey':
      return runRekey(ctx, rest, SECRETS_USAGE);
    case undefined:
      throw new UsageError('missing secrets command', SECRETS_USAGE);
    default:
      throw new UsageError(`unknown secrets command "${command}"`, SECRETS_USAGE);
  }
}
