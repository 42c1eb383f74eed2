/** `svc build …` and `svc release …`: builds of a commit's services, their runs, logs and artifacts, and releases (docs/builds.md). */
import { jsonObjectFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api, seg } from '../http.ts';
import { note, printList, write, type Column, type ListBody } from '../output.ts';
import { followLog, printLogPages } from './log-lines.ts';
import { csvFlag, joined, listOptions, listQuery, printRecord } from './access-common.ts';
import { requireProject } from './manifest.ts';

export const BUILD_USAGE = `usage: svc build <command> [flags]

  create --sha SHA --manifest-hash HASH [--services a,b] [--inputs JSON] [--force-rebuild]
                           build the services with build config at commit SHA (40 hex); HASH is
                           the manifest synced for it (svc manifest validate --ref SHA prints it).
                           A success of the same commit, manifest and services is reused unless
                           --force-rebuild.
  list [--sha SHA] [--limit N] [--offset N]
  show BLD_ID              the spec and its latest run (status, error class, failed stage)
  runs BLD_ID [--status S] [--limit N] [--offset N]
  rerun BLD_ID [--force-rebuild]
  logs BLD_ID [--run RUN_ID] [-f|--follow]
                           builder output; -f follows it until the run ends (resuming after a
                           dropped connection) and exits 1 unless the run completed
  artifacts BLD_ID         images of the latest completed run: service, image, digest, size
  cancel BLD_ID            cancel the active run (a finished build is an error)

The project comes from --project, else the profile's project.

Examples:
  svc build create --sha 3f2a…c9 --manifest-hash sha256:… --services api,web
  svc build logs bld_01h… -f
  svc build artifacts bld_01h… --json`;

export const RELEASE_USAGE = `usage: svc release <command> [flags]

  create --build BLD_ID [--tag TAG] [--version V]
                           release a completed build's digests under TAG (unique in the project;
                           default: V, else sha-<first 12 of the sha>).
  list [--limit N] [--offset N]
  show TAG|REL_ID

The project comes from --project, else the profile's project.

Examples:
  svc release create --build bld_01h… --tag v1.4.0
  svc release show v1.4.0`;

const BUILD_FIELDS = ['id', 'project_id', 'git_sha', 'manifest_hash', 'services', 'status', 'created_by', 'created_at'];
const RUN_FIELDS = ['id', 'status', 'backend', 'reused_from', 'error_class', 'error_message', 'failed_stage', 'started_at', 'completed_at'];
const BUILD_COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'git_sha', header: 'SHA', format: (v) => String(v).slice(0, 12) },
  { key: 'services', format: (v) => (Array.isArray(v) ? joined(v) : 'all') },
  { key: 'status' },
  { key: 'created_at', header: 'CREATED' },
];
const RUN_COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'status' },
  { key: 'backend' },
  { key: 'error_class', header: 'ERROR' },
  { key: 'reused_from', header: 'REUSED' },
  { key: 'created_at', header: 'CREATED' },
];
const ARTIFACT_COLUMNS: Column[] = [
  { key: 'service_name', header: 'SERVICE' },
  { key: 'image_ref', header: 'IMAGE' },
  { key: 'digest' },
  { key: 'platforms', format: joined },
  { key: 'size_bytes', header: 'SIZE' },
];
const RELEASE_FIELDS = ['id', 'tag', 'version', 'build_id', 'git_sha', 'manifest_hash', 'image_digests', 'created_at'];
const RELEASE_COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'tag' },
  { key: 'version' },
  { key: 'build_id', header: 'BUILD' },
  { key: 'git_sha', header: 'SHA', format: (v) => String(v).slice(0, 12) },
  { key: 'created_at', header: 'CREATED' },
];

function showBuild(ctx: Context, build: { latest_run: Record<string, unknown> | null; [k: string]: unknown }): void {
  if (ctx.json) return write(JSON.stringify(build, null, 2));
  printRecord(ctx, build, BUILD_FIELDS);
  if (build.latest_run) {
    write('');
    printRecord(ctx, build.latest_run, RUN_FIELDS);
    const tail = build.latest_run.log_tail;
    if (Array.isArray(tail) && tail.length) write(['', 'last lines:', ...tail.map((l) => `  ${l}`)].join('\n'));
  }
}

async function logs(ctx: Context, buildId: string, runId: string | undefined, follow: boolean): Promise<number> {
  const path = `/builds/${seg(buildId)}/logs`;
  if (!follow) {
    await printLogPages(ctx, (page) => api(ctx).GET('/builds/{build_id}/logs', { params: { build_id: buildId }, query: { ...page, run_id: runId } }));
    return 0;
  }
  const final = await followLog<{ status: string; error_class: string | null; error_message: string | null }>(
    ctx,
    `${path}?follow=true${runId ? `&run_id=${seg(runId)}` : ''}`,
  );
  if (!ctx.json) note(`svc: build ${final?.status ?? 'ended'}${final?.error_class ? ` (${final.error_class}): ${final.error_message}` : ''}`);
  return final?.status === 'completed' ? 0 : 1;
}

export async function runBuild(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'create': {
      const options = {
        sha: { type: 'string' },
        'manifest-hash': { type: 'string' },
        services: { type: 'string' },
        inputs: { type: 'string' },
        'force-rebuild': { type: 'boolean' },
      } as const;
      const { values } = parseCommand(rest, options, BUILD_USAGE, { min: 0, max: 0 });
      if (!values.sha || !values['manifest-hash']) throw new UsageError('--sha and --manifest-hash are required', BUILD_USAGE);
      const body = {
        git_sha: values.sha,
        manifest_hash: values['manifest-hash'],
        services: csvFlag(values.services, 'services', BUILD_USAGE),
        inputs: jsonObjectFlag(values.inputs, '--inputs', BUILD_USAGE),
        force_rebuild: values['force-rebuild'],
      };
      showBuild(ctx, await api(ctx).POST('/projects/{project_id}/builds', { params: { project_id: requireProject(ctx, BUILD_USAGE) }, body }));
      return 0;
    }
    case 'list': {
      const { values } = parseCommand(rest, { ...listOptions, sha: { type: 'string' } }, BUILD_USAGE, { min: 0, max: 0 });
      printList(
        ctx,
        await api(ctx).GET('/projects/{project_id}/builds', {
          params: { project_id: requireProject(ctx, BUILD_USAGE) },
          query: { ...listQuery(values, BUILD_USAGE), git_sha: values.sha },
        }),
        BUILD_COLUMNS,
        'builds',
      );
      return 0;
    }
    case 'show':
    case 'cancel': {
      const { positionals } = parseCommand(rest, {}, BUILD_USAGE, { min: 1, max: 1 });
      showBuild(
        ctx,
        command === 'show'
          ? await api(ctx).GET('/builds/{build_id}', { params: { build_id: positionals[0] } })
          : await api(ctx).POST('/builds/{build_id}/cancel', { params: { build_id: positionals[0] }, body: {} }),
      );
      return 0;
    }
    case 'runs': {
      const { values, positionals } = parseCommand(rest, { ...listOptions, status: { type: 'string' } }, BUILD_USAGE, { min: 1, max: 1 });
      printList(
        ctx,
        await api(ctx).GET('/builds/{build_id}/runs', {
          params: { build_id: positionals[0] },
          query: { ...listQuery(values, BUILD_USAGE), status: values.status },
        }),
        RUN_COLUMNS,
        'runs',
      );
      return 0;
    }
    case 'rerun': {
      const { values, positionals } = parseCommand(rest, { 'force-rebuild': { type: 'boolean' } }, BUILD_USAGE, { min: 1, max: 1 });
      printRecord(
        ctx,
        await api(ctx).POST('/builds/{build_id}/runs', { params: { build_id: positionals[0] }, body: { force_rebuild: values['force-rebuild'] } }),
        RUN_FIELDS,
      );
      return 0;
    }
    case 'logs': {
      const { values, positionals } = parseCommand(rest, { run: { type: 'string' }, follow: { type: 'boolean', short: 'f' } }, BUILD_USAGE, { min: 1, max: 1 });
      return logs(ctx, positionals[0], values.run, values.follow === true);
    }
    case 'artifacts': {
      const { positionals } = parseCommand(rest, {}, BUILD_USAGE, { min: 1, max: 1 });
      const body = await api(ctx).GET('/builds/{build_id}/artifacts', { params: { build_id: positionals[0] } });
      printList(ctx, { data: body.data } as ListBody, ARTIFACT_COLUMNS, 'artifacts');
      return 0;
    }
    case undefined:
      throw new UsageError('missing build command', BUILD_USAGE);
    default:
      throw new UsageError(`unknown build command "${command}"`, BUILD_USAGE);
  }
}

export async function runRelease(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const projectId = () => requireProject(ctx, RELEASE_USAGE);
  switch (command) {
    case 'create': {
      const { values } = parseCommand(rest, { build: { type: 'string' }, tag: { type: 'string' }, version: { type: 'string' } }, RELEASE_USAGE, {
        min: 0,
        max: 0,
      });
      if (!values.build) throw new UsageError('--build is required', RELEASE_USAGE);
      const body = { build_id: values.build, tag: values.tag, version: values.version };
      printRecord(ctx, await api(ctx).POST('/projects/{project_id}/releases', { params: { project_id: projectId() }, body }), RELEASE_FIELDS);
      return 0;
    }
    case 'list': {
      const { values } = parseCommand(rest, listOptions, RELEASE_USAGE, { min: 0, max: 0 });
      printList(
        ctx,
        await api(ctx).GET('/projects/{project_id}/releases', { params: { project_id: projectId() }, query: listQuery(values, RELEASE_USAGE) }),
        RELEASE_COLUMNS,
        'releases',
      );
      return 0;
    }
    case 'show': {
      const { positionals } = parseCommand(rest, {}, RELEASE_USAGE, { min: 1, max: 1 });
      printRecord(ctx, await api(ctx).GET('/releases/{tag}', { params: { tag: positionals[0] }, query: { project_id: projectId() } }), RELEASE_FIELDS);
      return 0;
    }
    case undefined:
      throw new UsageError('missing release command', RELEASE_USAGE);
    default:
      throw new UsageError(`unknown release command "${command}"`, RELEASE_USAGE);
  }
}
