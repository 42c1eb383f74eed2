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

/** `--permission-mode` per policy: never = dontAsk (whatever would prompt is denied, nothing waits). */
const PERMISSION_MODE: Record<PermissionPolicy, string> = {
  default: 'default',
  auto_edit: 'acceptEdits',
  never: 'dontAsk',
  yolo: 'bypassPermissions',
};

/** The CLI has no effort flag; extended thinking is sized by MAX_THINKING_TOKENS. */
const THINKING_TOKENS: Record<ReasoningEffort, string> = { low: '4000', medium: '10000', high: '31999', 'x-high': '63999' };

export const CLAUDE_CAPABILITIES: HarnessCapabilities = {
  supportsModel: true,
  modelExamples: ['sonnet', 'opus', 'haiku', 'claude-sonnet-4-5'],
  reasoning: { supported: true, levels: ['low', 'medium', 'high', 'x-high'], mode: 'thinking_budget (MAX_THINKING_TOKENS)' },
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
  args.push(...(extra.args ?? []));
  // `--` ends the options: variadic flags (--mcp-config, --allowedTools) would otherwise swallow the prompt.
  args.push('--', prompt);
  const env: Record<string, string> = { ...input.env, ...extra.env };
  if (input.reasoningEffort) env.MAX_THINKING_TOKENS = THINKING_TOKENS[input.reasoningEffort];
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
    return [];
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
    default:
      // system/init, user (tool results), stream_event: nothing to normalize
      return [];
  }
});

/** An Anthropic console key, a long-lived OAuth token, or an interactive login's credentials file. */
export const CLAUDE_CREDENTIALS: HarnessCredentials = {
  env: [['ANTHROPIC_API_KEY'], ['CLAUDE_CODE_OAUTH_TOKEN']],
  files: ['.claude/.credentials.json'],
  instructions: [
    'Set ANTHROPIC_API_KEY in the server environment or as a system secret (POST /system/secrets).',
    'Or run `claude setup-token` once and set the token it prints as CLAUDE_CODE_OAUTH_TOKEN.',
    'Or log in once with `claude` as the user that runs jobs (stores ~/.claude/.credentials.json).',
  ],
};
