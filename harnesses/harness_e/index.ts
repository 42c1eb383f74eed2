/** harness_e (alias `coder`): CLI 3 (Gemini CLI), headless `--output-format stream-json`, as docs/harnesses.md describes. */
import path from 'node:path';
import type { HarnessDefinition, HarnessEvent, PermissionPolicy } from '../../core/ports/harness.ts';
import { defineHarness } from '../../core/sdk.ts';
import { count, field, isObject, jsonLineParser, text, usage, type Json } from '../common/lines.ts';
import { promptArgument } from '../common/prompt.ts';
import { planProgress, todoItems } from '../../core/harness-progress.ts';

/**
 * With GOOGLE_GEMINI_BASE_URL set the CLI takes the auth type for `gateway`, which headless runs
 * refuse (exit 41), unless settings select one. The settings go into a CLI home of the attempt's
 * own (GEMINI_CLI_HOME), under .svc/home: never the checkout, never the server's home, and a system
 * settings file would have to be root's. Without a base URL the CLI keeps the user's own home (a login).
 */
const CLI_HOME = '.svc/home';

function authType(env: Record<string, string>): string {
  if (env.GOOGLE_GENAI_USE_VERTEXAI === 'true') return 'vertex-ai';
  return 'gemini-api-key';
}

/** `--approval-mode` per policy; plan is the CLI's read-only mode. */
const APPROVAL_MODE: Record<PermissionPolicy, string> = { default: 'default', auto_edit: 'auto_edit', never: 'plan', yolo: 'yolo' };

/** `input_tokens` includes cached input; `input` is the uncached part (older releases lack it). */
function statsUsage(stats: Json, model?: string): HarnessEvent {
  const cached = count(stats.cached);
  const input = stats.input !== undefined ? count(stats.input) : Math.max(0, count(stats.input_tokens) - cached);
  return usage({ model, input, output: stats.output_tokens, cacheRead: cached });
}

function resultEvents(event: Json): HarnessEvent[] {
  const events: HarnessEvent[] = [];
  const stats = event.stats;
  if (isObject(stats)) {
    const models = stats.models;
    if (isObject(models) && Object.keys(models).length > 0) {
      for (const [model, s] of Object.entries(models)) if (isObject(s)) events.push(statsUsage(s, model));
    } else {
      events.push(statsUsage(stats));
    }
  }
  if (event.status === 'error') events.push({ type: 'error', message: text(field(event.error, 'message')) ?? 'run failed' });
  return events;
}

export const harnessE: HarnessDefinition = defineHarness({
  id: 'harness_e',
  aliases: ['coder'],
  description: 'CLI 3 (Gemini CLI), headless with the stream-json output',
  command: 'gemini',
  variants: [{ name: 'vertex', description: 'Through Vertex AI (GOOGLE_GENAI_USE_VERTEXAI=true) with GOOGLE_API_KEY or application default credentials' }],
  capabilities: {
    supportsModel: true,
    modelExamples: ['gemini-2.5-pro', 'gemini-2.5-flash'],
    reasoning: { supported: false, levels: [], mode: null },
  },
  credentials: {
    env: [['GEMINI_API_KEY'], ['GOOGLE_API_KEY', 'GOOGLE_GENAI_USE_VERTEXAI'], ['GOOGLE_APPLICATION_CREDENTIALS', 'GOOGLE_CLOUD_PROJECT']],
    files: ['.gemini/oauth_creds.json'],
    endpoints: ['GOOGLE_GEMINI_BASE_URL'],
    instructions: [
      'Set GEMINI_API_KEY in the server environment, or as a system secret shared with jobs (shared_with_jobs: true).',
      'Or, for Vertex AI, set GOOGLE_API_KEY with GOOGLE_GENAI_USE_VERTEXAI=true, or GOOGLE_APPLICATION_CREDENTIALS with GOOGLE_CLOUD_PROJECT.',
      'Or log in once with `gemini` as the user that runs jobs (stores ~/.gemini/oauth_creds.json).',
    ],
  },
  versions: { args: ['--version'], oldest: '0.61.0', newest: '0.61.0' },
  speaks: 'gemini',
  build(input) {
    const files: Record<string, string> = {};
    // `--prompt=` keeps a prompt that starts with '-' from being read as a flag.
    const args = [
      `--prompt=${promptArgument(input.prompt, files)}`,
      '--output-format',
      'stream-json',
      '--approval-mode',
      APPROVAL_MODE[input.permissionPolicy] ?? 'default',
    ];
    if (input.model) args.push('--model', input.model);
    // Headless runs refuse an untrusted folder (exit 55); the job's checkout is the folder it is for.
    const env: Record<string, string> = { ...input.env, GEMINI_CLI_TRUST_WORKSPACE: 'true' };
    if (input.variant === 'vertex') env.GOOGLE_GENAI_USE_VERTEXAI = 'true';
    if (env.GOOGLE_GEMINI_BASE_URL) {
      env.GEMINI_CLI_HOME = path.join(input.workspace, CLI_HOME);
      files[`${CLI_HOME}/.gemini/settings.json`] = JSON.stringify({ security: { auth: { selectedType: authType(env) } } }, null, 2);
    }
    return { command: 'gemini', args, env, files };
  },
  parseLine: jsonLineParser((event) => {
    switch (event.type) {
      case 'message':
        if (event.role !== 'assistant' || !text(event.content)) return [];
        return [event.delta === true ? { type: 'message', text: event.content as string, delta: true } : { type: 'message', text: event.content as string }];
      case 'tool_use': {
        if (!text(event.tool_name)) return [];
        const tool: HarnessEvent = { type: 'tool', name: event.tool_name as string, input: event.parameters };
        return event.tool_name === 'write_todos' ? [tool, ...planProgress(todoItems(event.parameters, ['description']))] : [tool];
      }
      case 'error':
        return event.severity === 'warning' ? [{ type: 'raw', text: text(event.message) ?? '' }] : [{ type: 'error', message: text(event.message) ?? 'error' }];
      case 'result':
        return resultEvents(event);
      default:
        return []; // init, tool_result
    }
  }),
});
