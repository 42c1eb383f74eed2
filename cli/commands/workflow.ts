import type { Context } from '../config.ts';
import { runDefinitions } from './manifest-definitions.ts';

export const WORKFLOW_USAGE = `usage: svc workflow <command> [flags]

  list [--limit N] [--offset N]   workflows in the project's current manifest
  show NAME                       one workflow: settings and steps

The project comes from --project, else the profile's project.`;

export const runWorkflow = (ctx: Context, args: string[]): Promise<number> => runDefinitions(ctx, args, 'workflows', WORKFLOW_USAGE);
