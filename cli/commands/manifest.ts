import { readFile } from 'node:fs/promises';
import { parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { ApiError, CliError, UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { note, printJson, printObject, write } from '../output.ts';

export const MANIFEST_USAGE = `usage: svc manifest <command> [flags]

  sync [--file F | --ref REF]      store a new version: from a local file, or from .svc/manifest.yaml
                                   in the project repository at REF (default: the project branch)
  validate [--file F | --ref REF]  check without storing; exits 1 when invalid
  show [--yaml]                    the current manifest (--yaml: only its text)

The project comes from --project, else the profile's project. Problems print as "path: message";
keys svc accepts but ignores (another tool's manifest keys) as "warning: path: message".

Examples:
  svc manifest validate --file .svc/manifest.yaml
  svc manifest sync --file .svc/manifest.yaml`;

const SHOWN = ['project_id', 'manifest_hash', 'git_sha', 'ref', 'synced_at', 'synced_by'];

interface Problem {
  path: string;
  message: string;
}

export function requireProject(ctx: Context, usage: string): string {
  if (!ctx.project) throw new UsageError("--project is required (or set the profile's project: `svc config set project ID`)", usage);
  return ctx.project;
}

const printProblems = (errors: Problem[]) => errors.forEach((e) => note(`${e.path || '(manifest)'}: ${e.message}`));
/** Keys svc accepted but ignores, on stderr so stdout stays the result. */
const printWarnings = (warnings: Problem[]) => warnings.forEach((w) => note(`warning: ${w.path}: ${w.message}`));

async function sourceBody(values: { file?: string; ref?: string }): Promise<Record<string, string>> {
  if (values.file !== undefined && values.ref !== undefined) throw new UsageError('pass --file or --ref, not both', MANIFEST_USAGE);
  if (values.ref !== undefined) return { ref: values.ref };
  if (values.file === undefined) return {};
  try {
    return { yaml: await readFile(values.file, 'utf8') };
  } catch (error) {
    throw new CliError(`cannot read ${values.file}: ${(error as Error).message}`);
  }
}

export async function runManifest(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const sourceOptions = { file: { type: 'string' }, ref: { type: 'string' } } as const;
  switch (command) {
    case 'sync': {
      const { values } = parseCommand(rest, sourceOptions, MANIFEST_USAGE, { min: 0, max: 0 });
      try {
        const stored = await api(ctx).POST('/projects/{project_id}/manifest', {
          params: { project_id: requireProject(ctx, MANIFEST_USAGE) },
          body: await sourceBody(values),
        });
        printObject(ctx, stored, SHOWN);
        if (!ctx.json) printWarnings(stored.warnings ?? []);
      } catch (error) {
        const errors = error instanceof ApiError ? (error.body as { errors?: Problem[] } | undefined)?.errors : undefined;
        if (!errors) throw error;
        if (ctx.json) printJson((error as ApiError).body);
        else printProblems(errors);
        note(`svc: manifest not synced: ${errors.length} problem${errors.length === 1 ? '' : 's'}`);
        return 1;
      }
      return 0;
    }
    case 'validate': {
      const { values } = parseCommand(rest, sourceOptions, MANIFEST_USAGE, { min: 0, max: 0 });
      const body = await api(ctx).POST('/projects/{project_id}/manifest/validate', {
        params: { project_id: requireProject(ctx, MANIFEST_USAGE) },
        body: await sourceBody(values),
      });
      if (ctx.json) printJson(body);
      else if (body.valid) {
        printWarnings(body.warnings ?? []);
        write(`Manifest is valid (${body.manifest_hash}).`);
      } else {
        printProblems(body.errors);
        write(`Manifest is invalid: ${body.errors.length} problem${body.errors.length === 1 ? '' : 's'}.`);
      }
      return body.valid ? 0 : 1;
    }
    case 'show': {
      const { values } = parseCommand(rest, { yaml: { type: 'boolean' } }, MANIFEST_USAGE, { min: 0, max: 0 });
      const body = await api(ctx).GET('/projects/{project_id}/manifest', { params: { project_id: requireProject(ctx, MANIFEST_USAGE) } });
      if (values.yaml && !ctx.json) process.stdout.write(body.yaml);
      else printObject(ctx, body, SHOWN);
      return 0;
    }
    case undefined:
      throw new UsageError('missing manifest command', MANIFEST_USAGE);
    default:
      throw new UsageError(`unknown manifest command "${command}"`, MANIFEST_USAGE);
  }
}
