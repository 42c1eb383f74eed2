/** `svc env …`: environments, deploys, rollback, suspension and health over the API in docs/environments.md. */
import { intFlag, jsonObjectFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Schemas } from '../../client/index.ts';
import { api, seg } from '../http.ts';
import { formatFields, formatTable, note, printDone, printJson, printList, write, type Column } from '../output.ts';
import { requireProject } from './manifest.ts';
import { followRun } from './pipeline-runs.ts';
import { followLog, printLogPages } from './log-lines.ts';

export const ENV_USAGE = `usage: svc env <command> [flags]

  list [--kind K] [--type persistent|temporary] [--limit N] [--offset N]
                                  the project's environments
  show ENV                        one environment: health, suspension, current release
  create ENV [--kind K] [--type persistent|temporary] [--namespace NS] [--db-ref REF]
             [--pipeline NAME] [--pipeline-inputs JSON]
                                  ensure an environment: created, or the existing one when the
                                  flags given match it (exit 1 naming what differs otherwise)
  delete ENV                      delete it and what runs for it (persistent: environments:admin)
  deploy ENV (--release-tag TAG | --sha SHA --manifest-hash HASH) [--image-digests JSON]
             [--image-tag TAG] [--direct] [--inputs JSON] [-f|--follow]
                                  deploy a release: through the environment's pipeline unless
                                  --direct (or it has none). -f streams the deploy's log (or
                                  the pipeline run's events) until it ends
  rollback ENV [--release-tag TAG | --release-id ID] [-f|--follow]
                                  deploy an earlier release: the one named, else the one before
                                  (-f streams its log)
  logs ENV DEPLOY_ID [-f|--follow]
                                  a deploy's log: what svc and the deployer did; -f follows it
                                  until the deploy ends (exit 1 when it failed)
  suspend ENV [--reason R]        stop its services; deploys and jobs naming it are refused
  resume ENV                      run its current release again
  health ENV                      health read from the runtime now
  history ENV [--status S] [--limit N] [--offset N]
                                  its deploys, newest first (--status awaiting_approval: those
                                  a reviewer has to approve)
  approve ENV DEPLOY_ID [--comment C]
                                  approve a deploy awaiting approval (a reviewer of a protected
                                  environment): once enough approve, it runs
  reject ENV DEPLOY_ID [--comment C]
                                  reject a deploy awaiting approval: it ends rejected

deploy -f and rollback -f exit 1 when the deploy (or run) fails or is rejected, 0 when it
succeeds (a deploy awaiting approval is followed until a reviewer decides and it ends); with
--json they print only the deploy as it ended.
The project comes from --project, else the profile's project.

Examples:
  svc env deploy staging --release-tag v1.2.0 --follow
  svc env rollback staging -f
  svc env deploy pr-12 --release-tag v1.2.0 --direct -f
  svc env logs staging dep_01h… -f
  svc env history production --status awaiting_approval
  svc env approve production dep_01h… --comment "release notes checked"
  svc env suspend staging --reason "maintenance window"`;

type Deploy = Schemas['Deploy'];

const ENV_COLUMNS: Column[] = [
  { key: 'name' },
  { key: 'type' },
  { key: 'kind', format: (v) => (v as string | null) ?? '-' },
  { key: 'health' },
  { key: 'suspended', format: (v) => (v ? 'yes' : 'no') },
  { key: 'current_release', header: 'RELEASE', format: (v) => releaseName(v as Deploy['release'] | null) },
];
const DEPLOY_COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'status' },
  { key: 'release', format: (v) => releaseName(v as Deploy['release']) },
  { key: 'created_at', header: 'CREATED' },
  { key: 'error_message', header: 'ERROR', format: (v) => (v as string | null) ?? '' },
];
const ENV_FIELDS = ['id', 'name', 'type', 'kind', 'namespace', 'db_ref', 'pipeline', 'health', 'suspended', 'suspended_reason', 'created_at'];
const DEPLOY_FIELDS = ['id', 'status', 'direct', 'pipeline_run_id', 'rollback_of', 'error_message', 'run_after', 'created_at', 'completed_at'];

function releaseName(r: Deploy['release'] | null): string {
  if (!r) return '-';
  return r.tag ?? r.id ?? r.git_sha?.slice(0, 12) ?? '-';
}

function showEnv(ctx: Context, env: Record<string, unknown>): void {
  if (ctx.json) return printJson(env);
  const head = formatFields([
    ...ENV_FIELDS.map((k) => [k, env[k]] as [string, unknown]),
    ['release', releaseName(env.current_release as Deploy['release'] | null)],
  ]);
  const services = (env.health_detail as Record<string, unknown>[]) ?? [];
  write(
    services.length ? `${head}\nservices:\n${formatTable(services, [{ key: 'service' }, { key: 'health' }, { key: 'detail' }]).replace(/^/gm, '  ')}` : head,
  );
}

function showDeploy(ctx: Context, deploy: Deploy): void {
  if (ctx.json) return printJson(deploy);
  const fields: Record<string, unknown> = deploy;
  const reviews = deploy.reviews.map((r) => `${r.decision} by ${r.user_id}${r.comment ? `: ${r.comment}` : ''}`);
  write(
    formatFields([
      ...DEPLOY_FIELDS.map((k) => [k, fields[k]] as [string, unknown]),
      ['release', releaseName(deploy.release)],
      ...(reviews.length ? [['reviews', reviews.join('; ')] as [string, unknown]] : []),
    ]),
  );
}

type DeployEnd = { status: string; error_message: string | null };

/**
 * Follows the deploy to its end: the pipeline run that carries it, else the deploy's log as it is
 * written (not with --json, which prints the deploy as it ended); exit 1 when it failed.
 */
async function follow(ctx: Context, project_id: string, env: string, deploy: Deploy): Promise<number> {
  if (deploy.pipeline_run_id) {
    const status = await followRun(ctx, deploy.pipeline_run_id);
    return status === 'succeeded' ? 0 : 1;
  }
  if (!ctx.json) note(`svc: deploy ${deploy.id} of ${releaseName(deploy.release)} ${deploy.status}`);
  const path = `/projects/${seg(project_id)}/environments/${seg(env)}/deploys/${seg(deploy.id)}`;
  await followLog<DeployEnd>(ctx, `${path}/logs?follow=true`, ctx.json ? () => undefined : undefined);
  const ended = await api(ctx).GET('/projects/{project_id}/environments/{env}/deploys/{deploy_id}', { params: { project_id, env, deploy_id: deploy.id } });
  // A deploy held for approval that went ahead through the environment's pipeline: its run carries it on.
  if (ended.pipeline_run_id) return follow(ctx, project_id, env, ended);
  showDeploy(ctx, ended);
  return ended.status === 'succeeded' ? 0 : 1;
}

export async function runEnv(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const usage = ENV_USAGE;
  const envs = () => `/projects/${seg(requireProject(ctx, usage))}/environments`;
  const one = (positionals: string[]) => `${envs()}/${seg(positionals[0])}`;
  const single = { min: 1, max: 1 };
  switch (command) {
    case 'list': {
      const options = { kind: { type: 'string' }, type: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values: v } = parseCommand(rest, options, usage, { min: 0, max: 0 });
      const query = { kind: v.kind, type: v.type, limit: intFlag(v.limit, 'limit', usage), offset: intFlag(v.offset, 'offset', usage) };
      printList(
        ctx,
        await api(ctx).GET('/projects/{project_id}/environments', { params: { project_id: requireProject(ctx, usage) }, query }),
        ENV_COLUMNS,
        'environments',
      );
      return 0;
    }
    case 'show':
    case 'health': {
      const { positionals } = parseCommand(rest, {}, usage, single);
      const params = { project_id: requireProject(ctx, usage), env: positionals[0] };
      showEnv(
        ctx,
        command === 'health'
          ? await api(ctx).GET('/projects/{project_id}/environments/{env}/health', { params })
          : await api(ctx).GET('/projects/{project_id}/environments/{env}', { params }),
      );
      return 0;
    }
    case 'create': {
      const options = {
        kind: { type: 'string' },
        type: { type: 'string' },
        namespace: { type: 'string' },
        'db-ref': { type: 'string' },
        pipeline: { type: 'string' },
        'pipeline-inputs': { type: 'string' },
      } as const;
      const { values: v, positionals } = parseCommand(rest, options, usage, single);
      const body = {
        name: positionals[0],
        kind: v.kind,
        type: v.type as Schemas['EnvironmentEnsure']['type'],
        namespace: v.namespace,
        db_ref: v['db-ref'],
        pipeline: v.pipeline,
        pipeline_inputs: jsonObjectFlag(v['pipeline-inputs'], '--pipeline-inputs', usage),
      };
      showEnv(ctx, await api(ctx).POST('/projects/{project_id}/environments/ensure', { params: { project_id: requireProject(ctx, usage) }, body }));
      return 0;
    }
    case 'delete': {
      const { positionals } = parseCommand(rest, {}, usage, single);
      await api(ctx).DELETE('/projects/{project_id}/environments/{env}', { params: { project_id: requireProject(ctx, usage), env: positionals[0] } });
      printDone(ctx, `environment ${positionals[0]} deleted`);
      return 0;
    }
    case 'suspend': {
      const { values: v, positionals } = parseCommand(rest, { reason: { type: 'string' } }, usage, single);
      showEnv(
        ctx,
        await api(ctx).POST('/projects/{project_id}/environments/{env}/suspend', {
          params: { project_id: requireProject(ctx, usage), env: positionals[0] },
          body: { reason: v.reason },
        }),
      );
      return 0;
    }
    case 'resume': {
      const { positionals } = parseCommand(rest, {}, usage, single);
      showEnv(
        ctx,
        await api(ctx).POST('/projects/{project_id}/environments/{env}/resume', { params: { project_id: requireProject(ctx, usage), env: positionals[0] } }),
      );
      return 0;
    }
    case 'logs': {
      const { values: v, positionals } = parseCommand(rest, { follow: { type: 'boolean', short: 'f' } }, usage, { min: 2, max: 2 });
      const path = `${one(positionals)}/deploys/${seg(positionals[1])}/logs`;
      if (!v.follow) {
        const params = { project_id: requireProject(ctx, usage), env: positionals[0], deploy_id: positionals[1] };
        await printLogPages(ctx, (query) => api(ctx).GET('/projects/{project_id}/environments/{env}/deploys/{deploy_id}/logs', { params, query }));
        return 0;
      }
      const end = await followLog<DeployEnd>(ctx, `${path}?follow=true`);
      if (!ctx.json) note(`svc: deploy ${end?.status ?? 'ended'}${end?.error_message ? `: ${end.error_message}` : ''}`);
      return end?.status === 'failed' ? 1 : 0;
    }
    case 'history': {
      const options = { status: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values: v, positionals } = parseCommand(rest, options, usage, single);
      const query = { status: v.status, limit: intFlag(v.limit, 'limit', usage), offset: intFlag(v.offset, 'offset', usage) };
      printList(
        ctx,
        await api(ctx).GET('/projects/{project_id}/environments/{env}/deploys', {
          params: { project_id: requireProject(ctx, usage), env: positionals[0] },
          query,
        }),
        DEPLOY_COLUMNS,
        'deploys',
      );
      return 0;
    }
    case 'deploy': {
      const options = {
        'release-tag': { type: 'string' },
        sha: { type: 'string' },
        'manifest-hash': { type: 'string' },
        'image-digests': { type: 'string' },
        'image-tag': { type: 'string' },
        direct: { type: 'boolean' },
        inputs: { type: 'string' },
        follow: { type: 'boolean', short: 'f' },
      } as const;
      const { values: v, positionals } = parseCommand(rest, options, usage, single);
      const body = {
        release_tag: v['release-tag'],
        git_sha: v.sha,
        manifest_hash: v['manifest-hash'],
        image_digests: jsonObjectFlag(v['image-digests'], '--image-digests', usage),
        image_tag: v['image-tag'],
        direct: v.direct,
        inputs: jsonObjectFlag(v.inputs, '--inputs', usage),
      };
      const deploy = await api(ctx).POST('/projects/{project_id}/environments/{env}/deploy', {
        params: { project_id: requireProject(ctx, usage), env: positionals[0] },
        body,
      });
      return v.follow ? follow(ctx, requireProject(ctx, usage), positionals[0], deploy) : (showDeploy(ctx, deploy), 0);
    }
    case 'approve':
    case 'reject': {
      const { values: v, positionals } = parseCommand(rest, { comment: { type: 'string' } }, usage, { min: 2, max: 2 });
      const params = { project_id: requireProject(ctx, usage), env: positionals[0], deploy_id: positionals[1] };
      const body = { comment: v.comment };
      showDeploy(
        ctx,
        command === 'approve'
          ? await api(ctx).POST('/projects/{project_id}/environments/{env}/deploys/{deploy_id}/approve', { params, body })
          : await api(ctx).POST('/projects/{project_id}/environments/{env}/deploys/{deploy_id}/reject', { params, body }),
      );
      return 0;
    }
    case 'rollback': {
      const options = { 'release-tag': { type: 'string' }, 'release-id': { type: 'string' }, follow: { type: 'boolean', short: 'f' } } as const;
      const { values: v, positionals } = parseCommand(rest, options, usage, single);
      const body = { release_tag: v['release-tag'], release_id: v['release-id'] };
      const deploy = await api(ctx).POST('/projects/{project_id}/environments/{env}/rollback', {
        params: { project_id: requireProject(ctx, usage), env: positionals[0] },
        body,
      });
      return v.follow ? follow(ctx, requireProject(ctx, usage), positionals[0], deploy) : (showDeploy(ctx, deploy), 0);
    }
    default:
      throw new UsageError(command ? `unknown env command "${command}"` : 'missing env command', usage);
  }
}
