/** harness_f: CLI 4 (opencode), non-interactive `opencode run --format json`, as docs/harnesses.md describes. */
import type { HarnessDefinition, HarnessEvent, PermissionPolicy, ReasoningEffort } from '../../core/ports/harness.ts';
import { defineHarness } from '../../core/sdk.ts';
import { field, isObject, jsonLineParser, text, usage, type Json } from '../common/lines.ts';
import { promptArgument } from '../common/prompt.ts';
import { planProgress, todoItems } from '../../core/harness-progress.ts';
import { MANAGED_PREFIX, isManagedModel } from '../../core/ports/inference.ts';

/**
 * Permissions are config (`permission` per tool: allow, ask, deny), given inline through
 * OPENCODE_CONFIG_CONTENT (merged over the user's config). A run rejects whatever would ask;
 * default leaves the user's config (and the CLI's defaults) as they are.
 */
const PERMISSION: Record<PermissionPolicy, Json | null> = {
  default: null,
  auto_edit: { edit: 'allow' },
  never: { edit: 'deny', bash: 'deny', webfetch: 'deny' },
  yolo: { edit: 'allow', bash: 'allow', webfetch: 'allow', external_directory: 'allow' },
};

/** `--variant` names are the provider's; these are the common ones. */
const VARIANT: Record<ReasoningEffort, string> = { low: 'low', medium: 'medium', high: 'high', 'x-high': 'max' };

function stepUsage(part: unknown): HarnessEvent[] {
  const tokens = field(part, 'tokens');
  if (!isObject(tokens)) return [];
  const cache = field(tokens, 'cache');
  return [
    usage({
      input: tokens.input,
      output: tokens.output,
      reasoning: tokens.reasoning,
      cacheRead: field(cache, 'read'),
      cacheWrite: field(cache, 'write'),
      costUsd: field(part, 'cost'),
    }),
  ];
}

/** The variants a provider's model declares so `--variant` reaches the request as chat completions' `reasoning_effort`. */
const EFFORT_VARIANTS: Json = {
  low: { reasoningEffort: 'low' },
  medium: { reasoningEffort: 'medium' },
  high: { reasoningEffort: 'high' },
  max: { reasoningEffort: 'xhigh' },
};

/** The provider id opencode reads from `--model managed/<name>`: svc's model gateway. */
const MANAGED_PROVIDER = 'managed';

/**
 * The `managed` provider for `managed/<name>`: svc's model gateway in chat completions (what the
 * worker hands a CLI that speaks `chat`: OPENAI_BASE_URL, and the job token as OPENAI_API_KEY),
 * its one model sent upstream as `managed/<name>` (`id`), which the gateway resolves. opencode reads
 * `--model managed/<name>` as provider `managed`, model `<name>`.
 */
function managedProvider(model: string): Json {
  const name = model.slice(MANAGED_PREFIX.length);
  return {
    npm: '@ai-sdk/openai-compatible',
    name: "svc's model gateway",
    options: { baseURL: '{env:OPENAI_BASE_URL}', apiKey: '{env:OPENAI_API_KEY}' },
    models: { [name]: { id: model, name: model, variants: EFFORT_VARIANTS } },
  };
}

/** OPENCODE_CONFIG_CONTENT as an object ({} when unset or not a JSON object). */
function inlineConfig(content: string | undefined): Json {
  if (!content) return {};
  try {
    const value: unknown = JSON.parse(content);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

export const harnessF: HarnessDefinition = defineHarness({
  id: 'harness_f',
  description: 'CLI 4 (opencode), non-interactive run with the JSON event stream; any provider it supports',
  command: 'opencode',
  variants: [],
  // Providers and their variants in inline config, and --variant, as 1.18.33 reads them (the version tested).
  versions: { args: ['--version'], oldest: '1.18.33', newest: '1.18.33' },
  // Its own providers speak what their package speaks; a managed model is given an OpenAI-compatible one.
  speaks: 'chat',
  capabilities: {
    supportsModel: true,
    modelExamples: ['anthropic/claude-sonnet-4-5', 'openai/gpt-5', 'openrouter/qwen/qwen3-coder'],
    reasoning: { supported: true, levels: ['low', 'medium', 'high', 'x-high'], mode: 'flag (--variant, provider-specific names)' },
  },
  credentials: {
    env: [['ANTHROPIC_API_KEY'], ['OPENAI_API_KEY'], ['OPENROUTER_API_KEY'], ['GEMINI_API_KEY'], ['GOOGLE_GENERATIVE_AI_API_KEY'], ['GROQ_API_KEY']],
    files: ['.local/share/opencode/auth.json'],
    instructions: [
      'Set the API key of the provider the model names (ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY, GEMINI_API_KEY, ...) in the server environment, or as a system secret shared with jobs (shared_with_jobs: true).',
      'Or log in once with `opencode auth login` as the user that runs jobs (stores ~/.local/share/opencode/auth.json).',
    ],
  },
  build(input) {
    const files: Record<string, string> = {};
    const prompt = promptArgument(input.prompt, files);
    const args = ['run', '--format', 'json'];
    if (input.model) args.push('--model', input.model);
    if (input.reasoningEffort) args.push('--variant', VARIANT[input.reasoningEffort]);
    args.push('--', prompt);
    const env = { ...input.env };
    // Inline config the job already carries (a provider, say) is kept; the policy's permissions go over its own.
    const config = inlineConfig(env.OPENCODE_CONFIG_CONTENT);
    const inline = { ...config };
    const permission = PERMISSION[input.permissionPolicy];
    if (permission) inline.permission = { ...(isObject(config.permission) ? config.permission : {}), ...permission };
    // A managed model: svc's gateway is its provider, for the title and summary calls too (small_model).
    if (isManagedModel(input.model)) {
      inline.provider = { ...(isObject(config.provider) ? config.provider : {}), [MANAGED_PROVIDER]: managedProvider(input.model!) };
      inline.small_model = input.model!;
    }
    if (permission || isManagedModel(input.model)) env.OPENCODE_CONFIG_CONTENT = JSON.stringify(inline);
    // Without --model the CLI runs the model its config names; the receipt names that one too.
    const model = input.model ?? text(config.model);
    return { command: 'opencode', args, env, files, ...(model ? { model } : {}) };
  },
  parseLine: jsonLineParser((event) => {
    const part = event.part;
    switch (event.type) {
      case 'text':
        return text(field(part, 'text')) ? [{ type: 'message', text: field(part, 'text') as string }] : [];
      case 'tool_use': {
        const name = text(field(part, 'tool'));
        if (!name) return [];
        const state = field(part, 'state');
        const input = field(state, 'input');
        const tool: HarnessEvent = { type: 'tool', name, input };
        // A tool that failed or was refused (a permission rule) says why in its state.
        if (field(state, 'status') === 'error') return [tool, { type: 'error', message: `[tool error] ${text(field(state, 'error')) || `${name} failed`}` }];
        return name === 'todowrite' ? [tool, ...planProgress(todoItems(input, ['content']))] : [tool];
      }
      case 'step_finish':
        return stepUsage(part);
      case 'error': {
        const error = event.error;
        return [{ type: 'error', message: text(field(field(error, 'data'), 'message')) ?? text(field(error, 'name')) ?? 'error' }];
      }
      default:
        return []; // step_start, reasoning, done
    }
  }),
});
