import { splitGlobals } from './args.ts';
import { ACCESS_USAGE, runAccess } from './commands/access.ts';
import { ACCESS_REQUEST_USAGE, runAccessRequest } from './commands/access-request.ts';
import { AUTH_USAGE, runAuth } from './commands/auth.ts';
import { CONFIG_USAGE, runConfig } from './commands/config.ts';
import { CONSOLE_USAGE, runConsole } from './commands/console.ts';
import { DOC_USAGE, runDoc } from './commands/doc.ts';
import { INVITE_USAGE, runInvite } from './commands/invite.ts';
import { JOB_USAGE, runJob } from './commands/job.ts';
import { HARNESS_USAGE, runHarness } from './commands/harness.ts';
import { MANIFEST_USAGE, runManifest } from './commands/manifest.ts';
import { PIPELINE_USAGE, runPipeline } from './commands/pipeline.ts';
import { ENV_USAGE, runEnv } from './commands/env.ts';
import { EVENT_USAGE, runEvent } from './commands/event.ts';
import { SCHEDULE_USAGE, runSchedule } from './commands/schedule.ts';
import { WORKFLOW_USAGE, runWorkflow } from './commands/workflow.ts';
import { ORG_USAGE, runOrg } from './commands/org.ts';
import { PROJECT_USAGE, runProject } from './commands/project.ts';
import { SA_USAGE, runSa } from './commands/sa.ts';
import { SECRETS_USAGE, runSecrets } from './commands/secrets.ts';
import { WEBHOOK_USAGE, runWebhook } from './commands/webhook.ts';
import { BUILD_USAGE, RELEASE_USAGE, runBuild, runRelease } from './commands/build.ts';
import { INFERENCE_USAGE, MODELS_USAGE, runInference, runModels } from './commands/inference.ts';
import { THREAD_USAGE, runThread } from './commands/thread.ts';
import { ANALYTICS_USAGE, PRICING_USAGE, SPEND_USAGE, runAnalytics, runPricing, runSpend } from './commands/billing.ts';
import { DEFAULT_API_URL, resolveContext, type Context } from './config.ts';
import { ApiError, CliError, UsageError } from './errors.ts';
import { VERSION } from '../core/version.ts';
import { closest } from '../core/closest.ts';

export const USAGE = `usage: svc [global flags] <command> [args]

Commands:
  auth      bootstrap, login (SSH key), logout, whoami, keys, mint       svc auth --help
  org       organizations and their members                              svc org --help
  project   projects and their members                                   svc project --help
  invite    org invites: create, list, revoke, accept                    svc invite --help
  access-request  ask to join an org; admins list, approve, reject       svc access-request --help
  access    custom roles, bindings, groups; can / explain permissions    svc access --help
  sa        service accounts and their tokens: create, mint, revoke      svc sa --help
  job       jobs: create, list, review, relations, attachments, attempts  svc job --help
  harness   the coding CLIs this server runs, and whether each is ready  svc harness --help
  doc       versioned org documents: list, get, put, delete, versions     svc doc --help
  manifest  project manifest: sync, validate, show                      svc manifest --help
  workflow  workflows in the project manifest: list, show               svc workflow --help
  pipeline  pipelines: list, show; run, runs, logs, approve, cancel     svc pipeline --help
  build     builds: create, list, show, runs, rerun, logs [-f], artifacts, cancel  svc build --help
  release   releases of builds: create, list, show                     svc release --help
  env       environments: list, show, create, delete, deploy, rollback, logs, suspend, resume, health, history  svc env --help
  event     events: create, list, show (with how triggers routed them)  svc event --help
  schedule  project schedules that emit events: list, create, update, delete  svc schedule --help
  thread    project threads, team coordination: list, create, show, post  svc thread --help
  webhook   outbound webhooks: create, list, deliveries, test, replay   svc webhook --help
  secrets   project, org, user and system secrets; master-key rekey      svc secrets --help
  models    models to send to the inference proxy: list                  svc models --help
  inference inference targets and managed models                         svc inference --help
  pricing   rate cards and exchange rates (system administrator)         svc pricing --help
  spend     what the org spent: totals, by project, model, harness, day  svc spend --help
  analytics org analytics: summary, jobs, pipelines, env-health          svc analytics --help
  console   open the web console in a browser, signed in                svc console --help
  config    profiles: API URL, default org and project                   svc config --help
  serve     run the svc server (svc serve --help)

Global flags (accepted anywhere):
  --api-url URL      API base URL
  --profile NAME     profile in ~/.svc/config.json (also SVC_PROFILE)
  --org ORG_ID       org to act on (default: the profile's org)
  --project ID       project to act on (default: the profile's project)
  --json             print the API's JSON response instead of tables
  -h, --help         show help
  -V, --version      print svc's version

API URL: --api-url, else SVC_API_URL, else the profile's api_url, else ${DEFAULT_API_URL}.
Token: SVC_TOKEN, else the token stored by \`svc auth login\` for that API URL.

Files (~ is $HOME):
  ~/.svc/config.json        {"current_profile": "default",
                             "profiles": {"default": {"api_url": "...", "org": "...", "project": "..."}}}
  ~/.svc/credentials.json   {"<api_url>": {"access_token": "...", "expires_at": "...", "email": "..."}}
                            keyed by API URL without trailing slash; mode 0600, directory 0700

Exit codes: 0 ok, 1 request or runtime error, 2 usage error.

Examples:
  svc auth bootstrap --email admin@example.com
  svc job create --description "Fix the login bug"
  svc job list --json`;

type Runner = (ctx: Context, args: string[]) => Promise<number>;

const GROUPS: Record<string, { run: Runner; usage: string }> = {
  auth: { run: runAuth, usage: AUTH_USAGE },
  org: { run: runOrg, usage: ORG_USAGE },
  project: { run: runProject, usage: PROJECT_USAGE },
  invite: { run: runInvite, usage: INVITE_USAGE },
  'access-request': { run: runAccessRequest, usage: ACCESS_REQUEST_USAGE },
  access: { run: runAccess, usage: ACCESS_USAGE },
  sa: { run: runSa, usage: SA_USAGE },
  job: { run: runJob, usage: JOB_USAGE },
  harness: { run: runHarness, usage: HARNESS_USAGE },
  doc: { run: runDoc, usage: DOC_USAGE },
  manifest: { run: runManifest, usage: MANIFEST_USAGE },
  workflow: { run: runWorkflow, usage: WORKFLOW_USAGE },
  pipeline: { run: runPipeline, usage: PIPELINE_USAGE },
  build: { run: runBuild, usage: BUILD_USAGE },
  release: { run: runRelease, usage: RELEASE_USAGE },
  env: { run: runEnv, usage: ENV_USAGE },
  event: { run: runEvent, usage: EVENT_USAGE },
  schedule: { run: runSchedule, usage: SCHEDULE_USAGE },
  thread: { run: runThread, usage: THREAD_USAGE },
  webhook: { run: runWebhook, usage: WEBHOOK_USAGE },
  secrets: { run: runSecrets, usage: SECRETS_USAGE },
  models: { run: runModels, usage: MODELS_USAGE },
  inference: { run: runInference, usage: INFERENCE_USAGE },
  pricing: { run: runPricing, usage: PRICING_USAGE },
  spend: { run: runSpend, usage: SPEND_USAGE },
  analytics: { run: runAnalytics, usage: ANALYTICS_USAGE },
  console: { run: runConsole, usage: CONSOLE_USAGE },
  config: { run: runConfig, usage: CONFIG_USAGE },
};

const groupOf = (name: string | undefined) => (name !== undefined && Object.hasOwn(GROUPS, name) ? GROUPS[name] : undefined);

/**
 * Run the CLI. Returns the exit code, or undefined for `svc serve`, whose server keeps the
 * process alive until SIGTERM.
 */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number | undefined> {
  try {
    const { globals, rest, serveArgs } = splitGlobals(argv);
    if (serveArgs) {
      const { serve } = await import('../core/main.ts');
      await serve(serveArgs);
      return undefined;
    }
    let [name, ...args] = rest;
    if (globals.version && name === undefined) {
      process.stdout.write(`svc ${VERSION}\n`);
      return 0;
    }
    if (name === 'help') {
      globals.help = true;
      [name, ...args] = args;
    }
    if (globals.help) {
      process.stdout.write(`${groupOf(name)?.usage ?? USAGE}\n`);
      return 0;
    }
    if (name === undefined) throw new UsageError('missing command', USAGE);
    const group = groupOf(name);
    if (!group) throw new UsageError(`unknown command "${name}"${didYouMean(name, [...Object.keys(GROUPS), 'serve', 'help'])}`, USAGE);
    const ctx = resolveContext(globals, env);
    if (ctx.profileMissing && name !== 'config') {
      throw new CliError(
        `profile "${ctx.profileName}" is not defined in ~/.svc/config.json`,
        `create it with \`svc config set api-url URL --profile ${ctx.profileName}\``,
      );
    }
    return await group.run(ctx, args);
  } catch (error) {
    return report(error);
  }
}

function didYouMean(word: string, candidates: Iterable<string>): string {
  const near = closest(word, candidates);
  return near ? `; did you mean "${near}"?` : '';
}

/** The command words a usage text lists: the first word of each line indented by two spaces, above its examples. */
function commandsIn(usage: string): string[] {
  return [...usage.split('\nExamples:\n')[0].matchAll(/^ {2}([a-z][\w-]*)/gm)].map((m) => m[1]);
}

/** Print an error the way the CLI promises and return its exit code. */
export function report(error: unknown): number {
  const print = (line: string) => process.stderr.write(`${line}\n`);
  if (error instanceof UsageError) {
    const usage = error.usage ?? USAGE;
    const unknown = /^unknown [\w-]+ command "([^"]+)"$/.exec(error.message);
    print(`svc: ${error.message}${unknown ? didYouMean(unknown[1], commandsIn(usage)) : ''}`);
    print(`svc: see '${/^usage: (svc(?: [a-z][\w-]*)*)/.exec(usage)?.[1] ?? 'svc'} --help'`);
    return 2;
  }
  if (error instanceof ApiError) {
    print(`svc: ${error.message} (${error.statusCode})`);
    if (error.hint) print(`svc: hint: ${error.hint}`);
    return 1;
  }
  if (error instanceof CliError) {
    print(`svc: ${error.message}`);
    if (error.hint) print(`svc: hint: ${error.hint}`);
    return 1;
  }
  const detail = error instanceof Error ? (process.env.SVC_DEBUG ? (error.stack ?? error.message) : error.message) : String(error);
  print(`svc: ${detail}`);
  return 1;
}
