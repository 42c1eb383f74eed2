/**
 * The assistant CLI 1 family (Claude Code: harness_a, harness_b, harness_c): headless print mode
 * with the stream-json output, as docs/harnesses.md describes.
 */
import type {
  HarnessCapabilities,
  HarnessCredentials,
  HarnessEvent,
  HarnessInput,
  HarnessInvocation,
  PermissionPolicy,
  ReasoningEffort,
} from '../../core/ports/harness.ts';
import { field, isObject, jsonLineParser, text, usage, type Json } from './lines.ts';
import { planProgress, todoItems } from '../../core/harness-progress.ts';
import { promptArgument } from './prompt.ts';

export const CLAUDE_COMMAND = 'claude';

/** `--effort` and the `dontAsk` permission mode are what the oldest known version is pinned by. */
export const CLAUDE_VERSIONS = { args: ['--version'], oldest: '2.1.332', newest: '2.1.332' };

/** `--permission-mode` per policy: never = dontAsk (whatever would prompt is denied, nothing waits). */
const PERMISSION_MODE: Record<PermissionPolicy, string> = {
  default: 'default',
  auto_edit: 'acceptEdits',
  never: 'dontAsk',
  yolo: 'bypassPermissions',
};

/**
 * `--effort <level>` (low, medium, high, xhigh, max): the CLI sends it as the request's
 * `output_config.effort` beside adaptive thinking. MAX_THINKING_TOKENS is ignored by the adaptive
 * models the CLI defaults to, so it is not used.
 */
const EFFORT: Record<ReasoningEffort, string> = { low: 'low', medium: 'medium', high: 'high', 'x-high': 'xhigh' };

export const CLAUDE_CAPABILITIES: HarnessCapabilities = {
  supportsModel: true,
  modelExamples: ['sonnet', 'opus', 'haiku', 'claude-sonnet-4-5'],
  reasoning: { supported: true, levels: ['low', 'medium', 'high', 'x-high'], mode: 'flag (--effort low|medium|high|xhigh)' },
};

/** Arguments before the prompt; `extra` (plugin dirs, MCP config) go before the `--` that ends options. */
export function claudeInvocation(
  input: HarnessInput,
  extra: { args?: string[]; env?: Record<string, string>; files?: Record<string, string> } = {},
): HarnessInvocation {
  const files: Record<string, string> = { ...extra.files };
  const prompt = promptArgument(input.prompt, files);
  const args = ['-p', '--output-format', 'stream-json', '--verbose', '--permission-mode', PERMISSION_MODE[input.permissionPolicy] ?? 'default'];
  if (input.model) args.push('--model', input.model);
  if (input.reasoningEffort) args.push('--effort', EFFORT[input.reasoningEffort]);
  args.push(...(extra.args ?? []));
  // `--` ends the options: variadic flags (--mcp-config, --allowedTools) would otherwise swallow the prompt.
  args.push('--', prompt);
  const env: Record<string, string> = { ...input.env, ...extra.env };
  return { command: CLAUDE_COMMAND, args, env, files };
}

function contentEvents(message: unknown): HarnessEvent[] {
  const content = field(message, 'content');
  if (typeof content === 'string') return content ? [{ type: 'message', text: content }] : [];
  if (!Array.isArray(content)) return [];
  return content.flatMap((block): HarnessEvent[] => {
    if (!isObject(block)) return [];
    if (block.type === 'text' && text(block.text)) return [{ type: 'message', text: block.text as string }];
    if (block.type !== 'tool_use' || !text(block.name)) return [];
    const tool: HarnessEvent = { type: 'tool', name: block.name as string, input: block.input };
    return block.name === 'TodoWrite' ? [tool, ...planProgress(todoItems(block.input, ['activeForm', 'content']))] : [tool];
  });
}

/** The longest refusal or tool error kept in the log. */
const MAX_TOOL_ERROR = 500;

/**
 * Tool results come back on `user` lines; a failed one (`is_error`: a permission the mode denied, a
 * tool that failed) is logged, so the log says why nothing was written. Successful results are not.
 */
function toolErrors(message: unknown): HarnessEvent[] {
  const content = field(message, 'content');
  if (!Array.isArray(content)) return [];
  return content.flatMap((block): HarnessEvent[] => {
    if (!isObject(block) || block.type !== 'tool_result' || block.is_error !== true) return [];
    const body = Array.isArray(block.content) ? block.content.map((c) => text(field(c, 'text')) ?? '').join(' ') : (text(block.content) ?? '');
    const first = body.trim().split('\n')[0] ?? '';
    const shown = first.length > MAX_TOOL_ERROR ? `${first.slice(0, MAX_TOOL_ERROR)}…` : first;
    return [{ type: 'error', message: `[tool error] ${shown || 'the tool call failed'}` }];
  });
}

/**
 * The `result` line carries the run's cumulative usage (per model in `modelUsage`); assistant
 * lines repeat the usage of their API message once per content block, so they are not counted.
 * `duration_api_ms` is the time spent in provider calls over the whole run, so it is given only
 * when one model did all of them.
 */
function resultEvents(event: Json): HarnessEvent[] {
  const events: HarnessEvent[] = [];
  const byModel = event.modelUsage;
  const models = isObject(byModel) ? Object.entries(byModel) : [];
  const durationMs = models.length <= 1 ? event.duration_api_ms : undefined;
  if (models.length > 0) {
    for (const [model, u] of models) {
      events.push(
        usage({
          model,
          input: field(u, 'inputTokens'),
          output: field(u, 'outputTokens'),
          cacheRead: field(u, 'cacheReadInputTokens'),
          cacheWrite: field(u, 'cacheCreationInputTokens'),
          costUsd: field(u, 'costUSD'),
          durationMs,
        }),
      );
    }
  } else if (isObject(event.usage)) {
    const u = event.usage;
    events.push(
      usage({
        input: u.input_tokens,
        output: u.output_tokens,
        cacheRead: u.cache_read_input_tokens,
        cacheWrite: u.cache_creation_input_tokens,
        costUsd: event.total_cost_usd,
        durationMs,
      }),
    );
  }
  const subtype = text(event.subtype) ?? '';
  if (event.is_error === true || subtype.startsWith('error')) {
    events.push({ type: 'error', message: text(event.result) || `run ended with ${subtype || 'an error'}` });
  }
  return events;
}

export const parseClaudeLine = jsonLineParser((event) => {
  switch (event.type) {
    case 'assistant':
      return contentEvents(event.message);
    case 'result':
      return resultEvents(event);
    case 'user':
      return toolErrors(event.message);
    default:
      // system/init, stream_event: nothing to normalize
      return [];
  }
});

/** An Anthropic console key, a long-lived OAuth token, or an interactive login's credentials file. */
export const CLAUDE_CREDENTIALS: HarnessCredentials = {
  env: [['ANTHROPIC_API_KEY'], ['CLAUDE_CODE_OAUTH_TOKEN'], ['CLAUDE_CODE_OAUTH_REFRESH_TOKEN']],
  files: ['.claude/.credentials.json'],
  instructions: [
    'Set ANTHROPIC_API_KEY in the server environment, or as a system secret shared with jobs (POST /system/secrets with shared_with_jobs: true).',
    'Or run `claude setup-token` once and set the token it prints as CLAUDE_CODE_OAUTH_TOKEN.',
    "Or store a subscription login's refresh token as CLAUDE_CODE_OAUTH_REFRESH_TOKEN: svc obtains access tokens with it and renews them before they expire.",
    'Or log in once with `claude` as the user that runs jobs (stores ~/.claude/.credentials.json).',
  ],
  // Claude Code's own login client and token endpoint (facts of the CLI, as its flags are).
  oauth: {
    family: 'anthropic',
    tokenUrl: 'https://console.anthropic.com/v1/oauth/token',
    clientId: '9d1c250a-e61b-44d9-88ed-5944d1962f5e',
    token: 'CLAUDE_CODE_OAUTH_TOKEN',
    refresh: 'CLAUDE_CODE_OAUTH_REFRESH_TOKEN',
  },
};
