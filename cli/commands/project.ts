import { intFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { printDone, printList, printObject, type Column } from '../output.ts';
import { runMembers } from './members.ts';

export const PROJECT_USAGE = `usage: svc project <command> [flags]

  list [--org ID] [--include-deleted] [--limit N] [--offset N]
  get [ID]
  create NAME --org ID [--slug S] [--repo-url URL] [--branch B]
  ensure NAME --org ID [--slug S] [--repo-url URL] [--branch B] [--id ID]
                                       create, or return the existing project with these parameters
  update [ID] [--name N] [--repo-url URL] [--branch B] [--restore]
  delete [ID]                          soft delete (undo with update --restore)
  members list [ID] [--limit N] [--offset N]
  members add [ID] --email E [--role owner|admin|member]   (default role: member)
  members set-role [ID] USER_ID --role R
  members remove [ID] USER_ID

ID defaults to --project, then the profile's project (svc config set project ID);
--org defaults to the profile's org.

Examples:
  svc project create webapp --org ORG_ID --repo-url https://git.example.com/acme/webapp.git --branch main
  svc config set project PROJECT_ID`;

const PROJECT_FIELDS = ['id', 'org_id', 'name', 'slug', 'repo_url', 'branch', 'deleted', 'created_at', 'updated_at'];

function projectId(ctx: Context, positional: string | undefined): string {
  const id = positional ?? ctx.project;
  if (!id) throw new UsageError('missing project ID (pass it, or set --project / `svc config set project ID`)', PROJECT_USAGE);
  return id;
}

function requireOrg(ctx: Context): string {
  if (!ctx.org) throw new UsageError("--org is required (or set the profile's org: `svc config set org ID`)", PROJECT_USAGE);
  return ctx.org;
}

const SOURCE_OPTIONS = { slug: { type: 'string' }, 'repo-url': { type: 'string' }, branch: { type: 'string' } } as const;

export async function runProject(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const show = (body: unknown) => printObject(ctx, body, PROJECT_FIELDS);
  switch (command) {
    case 'list': {
      const options = { 'include-deleted': { type: 'boolean' }, limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values } = parseCommand(rest, options, PROJECT_USAGE, { min: 0, max: 0 });
      const query = {
        org_id: ctx.org,
        limit: intFlag(values.limit, 'limit', PROJECT_USAGE),
        offset: intFlag(values.offset, 'offset', PROJECT_USAGE),
        include_deleted: values['include-deleted'] ? true : undefined,
      };
      const columns: Column[] = [{ key: 'id' }, { key: 'name' }, { key: 'slug' }, { key: 'org_id', header: 'ORG' }];
      columns.push({ key: 'repo_url', header: 'REPO' }, { key: 'branch' });
      if (values['include-deleted']) columns.push({ key: 'deleted' });
      printList(ctx, await api(ctx).GET('/projects', { query }), columns, 'projects');
      return 0;
    }
    case 'get': {
      const { positionals } = parseCommand(rest, {}, PROJECT_USAGE, { min: 0, max: 1 });
      show(await api(ctx).GET('/projects/{project_id}', { params: { project_id: projectId(ctx, positionals[0]) } }));
      return 0;
    }
    case 'create':
    case 'ensure': {
      const options = command === 'ensure' ? { ...SOURCE_OPTIONS, id: { type: 'string' as const } } : SOURCE_OPTIONS;
      const { values, positionals } = parseCommand(rest, options, PROJECT_USAGE, { min: 1, max: 1 });
      const body = {
        org_id: requireOrg(ctx),
        name: positionals[0],
        slug: values.slug,
        repo_url: values['repo-url'],
        branch: values.branch,
        id: 'id' in values ? values.id : undefined,
      };
      show(command === 'ensure' ? await api(ctx).POST('/projects/ensure', { body }) : await api(ctx).POST('/projects', { body }));
      return 0;
    }
    case 'update': {
      const options = {
        name: { type: 'string' },
        'repo-url': { type: 'string' },
        branch: { type: 'string' },
        restore: { type: 'boolean' },
      } as const;
      const { values, positionals } = parseCommand(rest, options, PROJECT_USAGE, { min: 0, max: 1 });
      const body = {
        name: values.name,
        repo_url: values['repo-url'],
        branch: values.branch,
        deleted: values.restore ? false : undefined,
      };
      if (Object.values(body).every((v) => v === undefined)) {
        throw new UsageError('nothing to update: pass --name, --repo-url, --branch or --restore', PROJECT_USAGE);
      }
      show(await api(ctx).PATCH('/projects/{project_id}', { params: { project_id: projectId(ctx, positionals[0]) }, body }));
      return 0;
    }
    case 'delete': {
      const { positionals } = parseCommand(rest, {}, PROJECT_USAGE, { min: 0, max: 1 });
      const id = projectId(ctx, positionals[0]);
      await api(ctx).DELETE('/projects/{project_id}', { params: { project_id: id } });
      printDone(ctx, `Deleted project ${id}.`);
      return 0;
    }
    case 'members':
      return runMembers(ctx, { kind: 'project', defaultId: ctx.project, usage: PROJECT_USAGE }, rest);
    case undefined:
      throw new UsageError('missing project command', PROJECT_USAGE);
    default:
      throw new UsageError(`unknown project command "${command}"`, PROJECT_USAGE);
  }
}
