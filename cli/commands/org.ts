import { intFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { printDone, printList, printObject, type Column } from '../output.ts';
import { runMembers } from './members.ts';

export const ORG_USAGE = `usage: svc org <command> [flags]

  list [--include-deleted] [--limit N] [--offset N]
  get [ID]
  create NAME [--slug S]
  ensure NAME [--slug S] [--id ID]     create, or return the existing org with these parameters
  update [ID] [--name N] [--slug S] [--restore]
  delete [ID]                          soft delete (undo with update --restore)
  members list [ID] [--limit N] [--offset N]
  members add [ID] --email E [--role owner|admin|member]   (default role: member)
  members set-role [ID] USER_ID --role R
  members remove [ID] USER_ID

ID defaults to --org, then the profile's org (svc config set org ID).

Examples:
  svc org create "Acme" --slug acme
  svc org members add --email dev@example.com --role admin`;

const ORG_FIELDS = ['id', 'name', 'slug', 'deleted', 'created_at', 'updated_at'];

/** The org ID from the command line, else --org / the profile's org. */
function orgId(ctx: Context, positional: string | undefined): string {
  const id = positional ?? ctx.org;
  if (!id) throw new UsageError('missing org ID (pass it, or set --org / `svc config set org ID`)', ORG_USAGE);
  return id;
}

export async function runOrg(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const show = (body: unknown) => printObject(ctx, body, ORG_FIELDS);
  switch (command) {
    case 'list': {
      const options = { 'include-deleted': { type: 'boolean' }, limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values } = parseCommand(rest, options, ORG_USAGE, { min: 0, max: 0 });
      const query = {
        limit: intFlag(values.limit, 'limit', ORG_USAGE),
        offset: intFlag(values.offset, 'offset', ORG_USAGE),
        include_deleted: values['include-deleted'] ? true : undefined,
      };
      const columns: Column[] = [{ key: 'id' }, { key: 'name' }, { key: 'slug' }];
      if (values['include-deleted']) columns.push({ key: 'deleted' });
      columns.push({ key: 'created_at', header: 'CREATED' });
      printList(ctx, await api(ctx).GET('/orgs', { query }), columns, 'orgs');
      return 0;
    }
    case 'get': {
      const { positionals } = parseCommand(rest, {}, ORG_USAGE, { min: 0, max: 1 });
      show(await api(ctx).GET('/orgs/{org_id}', { params: { org_id: orgId(ctx, positionals[0]) } }));
      return 0;
    }
    case 'create': {
      const { values, positionals } = parseCommand(rest, { slug: { type: 'string' } }, ORG_USAGE, { min: 1, max: 1 });
      show(await api(ctx).POST('/orgs', { body: { name: positionals[0], slug: values.slug } }));
      return 0;
    }
    case 'ensure': {
      const options = { slug: { type: 'string' }, id: { type: 'string' } } as const;
      const { values, positionals } = parseCommand(rest, options, ORG_USAGE, { min: 1, max: 1 });
      const body = { name: positionals[0], slug: values.slug, id: values.id };
      show(await api(ctx).POST('/orgs/ensure', { body }));
      return 0;
    }
    case 'update': {
      const options = { name: { type: 'string' }, slug: { type: 'string' }, restore: { type: 'boolean' } } as const;
      const { values, positionals } = parseCommand(rest, options, ORG_USAGE, { min: 0, max: 1 });
      const body = { name: values.name, slug: values.slug, deleted: values.restore ? false : undefined };
      if (Object.values(body).every((v) => v === undefined)) {
        throw new UsageError('nothing to update: pass --name, --slug or --restore', ORG_USAGE);
      }
      show(await api(ctx).PATCH('/orgs/{org_id}', { params: { org_id: orgId(ctx, positionals[0]) }, body }));
      return 0;
    }
    case 'delete': {
      const { positionals } = parseCommand(rest, {}, ORG_USAGE, { min: 0, max: 1 });
      const id = orgId(ctx, positionals[0]);
      await api(ctx).DELETE('/orgs/{org_id}', { params: { org_id: id } });
      printDone(ctx, `Deleted org ${id}.`);
      return 0;
    }
    case 'members':
      return runMembers(ctx, { kind: 'org', defaultId: ctx.org, usage: ORG_USAGE }, rest);
    case undefined:
      throw new UsageError('missing org command', ORG_USAGE);
    default:
      throw new UsageError(`unknown org command "${command}"`, ORG_USAGE);
  }
}
