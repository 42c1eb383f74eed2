import type { Context } from '../config.ts';
import { runDefinitions } from './manifest-definitions.ts';

export const PIPELINE_USAGE = `usage: svc pipeline <command> [flags]

  list [--limit N] [--offset N]   pipelines in the project's current manifest
  show NAME                       one pipeline: trigger and steps

The project comes from --project, else the profile's project.`;

export const runPipeline = (ctx: Context, args: string[]): Promise<number> => runDefinitions(ctx, args, 'pipelines', PIPELINE_USAGE);
