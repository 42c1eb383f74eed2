import type { Context } from '../config.ts';
import { runDefinitions } from './manifest-definitions.ts';
import { RUN_COMMANDS, runPipelineRuns } from './pipeline-runs.ts';

export const PIPELINE_USAGE = `usage: svc pipeline <command> [flags]

  list [--limit N] [--offset N]   pipelines in the project's current manifest
  show NAME                       one pipeline: trigger and steps
  run NAME [--ref REF] [--env ENV] [--inputs JSON] [--input NAME=VALUE ...] [--only STEP,STEP] [--wait]
                                  start a run (one job per step). --ref: branch, tag or 40-hex SHA;
                                  --env: a manifest environment (its pipeline_inputs are the base);
                                  --inputs: a JSON object whose keys override them; --input: one
                                  input (a string), over --inputs; --only: just these steps;
                                  --wait: print the events until the run ends (with --json: then
                                  the final run). A required input the pipeline declares and the run
                                  lacks is asked for on a terminal; without one the command fails
                                  (exit 2) naming it
  runs NAME [--status S] [--limit N] [--offset N]
                                  the pipeline's runs, newest first
  logs RUN_ID [--step NAME] [-f|--follow]
                                  the events of an ended run (or step); for one still going, its
                                  steps' statuses. -f follows the events until the run (or step)
                                  ends, resuming with Last-Event-ID if the connection drops
  approve RUN_ID [--comment C]    release the steps awaiting approval
  cancel RUN_ID [--reason R]      cancel the run and its unfinished steps

Events print one a line: "[STEP] STATUS", "[STEP] LOG LINE", "run STATUS[: ERROR]"; with --json,
one JSON object a line: {"id": ..., "event": "step.status" | "step.log" | "run.status", "data": {...}}.
run --wait and logs -f exit 1 when the run (or the step) ends failed or cancelled, 0 when it succeeds.

The project comes from --project, else the profile's project (logs -f, approve and cancel need none).

Examples:
  svc pipeline run ship --ref main --wait
  svc pipeline run release --input version=1.4.0
  svc pipeline logs RUN_ID -f
  svc pipeline approve RUN_ID --comment "looks good"`;

export const runPipeline = (ctx: Context, args: string[]): Promise<number> =>
  RUN_COMMANDS.includes(args[0]) ? runPipelineRuns(ctx, args[0], args.slice(1), PIPELINE_USAGE) : runDefinitions(ctx, args, 'pipelines', PIPELINE_USAGE);
