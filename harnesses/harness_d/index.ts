/** harness_d: CLI 2 (OpenAI Codex CLI), non-interactive `codex exec --json`, as docs/harnesses.md describes. */
import type { HarnessDefinition, HarnessEvent, PermissionPolicy, ReasoningEffort } from '../../core/ports/harness.ts';
import { defineHarness } from '../../core/sdk.ts';
import { count, field, isObject, jsonLineParser, text, usage, type Json } from '../common/lines.ts';
import { promptArgument } from '../common/prompt.ts';
import { planProgress } from '../../core/harness-progress.ts';

/**
 * exec never prompts: approvals are off under every policy but default, and the policy picks the
 * sandbox. auto_edit was `--full-auto` (workspace-write), which 0.171 no longer has (exit 2).
 * Codex's own sandbox does not work inside svc's: its bubblewrap needs a `codex-linux-sandbox`
 * helper that Codex links into CODEX_HOME only outside /tmp, and nests user namespaces, so every
 * command under workspace-write fails. svc's attempt sandbox already confines the process to its
 * workspace, so auto_edit runs without Codex's (danger-full-access). never = read-only: Codex
 * itself rejects every patch, and no command can write. These flags mean the same in older releases.
 */
const POLICY_ARGS: Record<PermissionPolicy, string[]> = {
  default: [],
  auto_edit: ['--sandbox', 'danger-full-access', '-c', 'approval_policy="never"'],
  never: ['--sandbox', 'read-only', '-c', 'approval_policy="never"'],
  yolo: ['--dangerously-bypass-approvals-and-sandbox'],
};

/** A TOML basic string (what `-c key=value` parses the value as). */
const toml = (value: string) => JSON.stringify(value);

/**
 * Codex reads neither OPENAI_BASE_URL nor, in exec, OPENAI_API_KEY: the endpoint goes in as the
 * `openai_base_url` config key and the key as CODEX_API_KEY, so the variables every OpenAI client
 * honours (and svc's inference proxy sets) reach it.
 */
function endpointArgs(env: Record<string, string>): { args: string[]; env: Record<string, string> } {
  const out = { ...env };
  if (!out.CODEX_API_KEY && out.OPENAI_API_KEY) out.CODEX_API_KEY = out.OPENAI_API_KEY;
  return { args: out.OPENAI_BASE_URL ? ['-c', `openai_base_url=${toml(out.OPENAI_BASE_URL)}`] : [], env: out };
}

/** Notices Codex prints as `error` while it retries or changes transport; the turn goes on. */
const TRANSIENT = /^(Reconnecting\.\.\. \d+\/\d+|Falling back from WebSockets to HTTPS transport)/;
const problem = (message: string): HarnessEvent => (TRANSIENT.test(message) ? { type: 'raw', text: message } : { type: 'error', message });

const EFFORT: Record<ReasoningEffort, string> = { low: 'low', medium: 'medium', high: 'high', 'x-high': 'xhigh' };

function todoListProgress(item: Json): HarnessEvent[] {
  const items = Array.isArray(item.items) ? item.items.filter(isObject) : [];
  return planProgress(items.map((i) => ({ text: text(i.text) ?? 'untitled step', done: i.completed === true })));
}

/** Older releases named items by `item_type` and the reply `assistant_message`. */
function itemEvents(item: Json): HarnessEvent[] {
  const kind = text(item.type) ?? text(item.item_type);
  switch (kind) {
    case 'agent_message':
    case 'assistant_message':
      return text(item.text) ? [{ type: 'message', text: item.text as string }] : [];
    case 'command_execution':
      return [{ type: 'tool', name: 'command_execution', input: { command: item.command, exit_code: item.exit_code } }];
    case 'file_change':
      return [{ type: 'tool', name: 'file_change', input: { changes: item.changes } }];
    case 'mcp_tool_call':
      return [{ type: 'tool', name: [text(item.server), text(item.tool)].filter(Boolean).join('.') || 'mcp_tool_call', input: item.arguments }];
    case 'web_search':
      return [{ type: 'tool', name: 'web_search', input: { query: item.query } }];
    case 'error':
      return [problem(text(item.message) ?? 'error')];
    case 'todo_list':
      return todoListProgress(item);
    default:
      return []; // reasoning, todo_list
  }
}

/** Codex counts cached input inside input_tokens; normalized input is the uncached part. */
function turnUsage(u: unknown): HarnessEvent[] {
  if (!isObject(u)) return [];
  const cached = count(u.cached_input_tokens);
  return [usage({ input: Math.max(0, count(u.input_tokens) - cached), output: u.output_tokens, cacheRead: cached, reasoning: u.reasoning_output_tokens })];
}

export const harnessD: HarnessDefinition = defineHarness({
  id: 'harness_d',
  description: 'CLI 2 (OpenAI Codex CLI), non-interactive exec with the JSONL event stream',
  command: 'codex',
  variants: [],
  capabilities: {
    supportsModel: true,
    modelExamples: ['gpt-5-codex', 'gpt-5', 'o4-mini'],
    reasoning: { supported: true, levels: ['low', 'medium', 'high', 'x-high'], mode: 'config (-c model_reasoning_effort)' },
  },
  credentials: {
    env: [['OPENAI_API_KEY'], ['CODEX_API_KEY']],
    endpoints: ['OPENAI_BASE_URL'],
    files: ['.codex/auth.json'],
    instructions: [
      'Set OPENAI_API_KEY (or CODEX_API_KEY) in the server environment, or as a system secret shared with jobs (shared_with_jobs: true).',
      'Or log in once with `codex login` as the user that runs jobs (stores ~/.codex/auth.json).',
    ],
  },
  // The policy flags mean the same from long before 0.171 on (--full-auto, which 0.171 dropped, is
  // no longer used), so no flag depends on the version; the status says when it is outside this range.
  versions: { args: ['--version'], oldest: '0.171.0', newest: '0.171.0' },
  speaks: 'responses',
  // What 0.171 runs when neither --model nor config.toml names a model. Its JSON stream never names
  // the model, so a job naming none gets this one explicitly (registry) and the receipt names it.
  defaultModel: 'gpt-6.2-sol',
  build(input) {
    const files: Record<string, string> = {};
    const prompt = promptArgument(input.prompt, files);
    const endpoint = endpointArgs(input.env);
    const args = ['exec', '--json', '--skip-git-repo-check', ...(POLICY_ARGS[input.permissionPolicy] ?? []), ...endpoint.args];
    if (input.model) args.push('--model', input.model);
    if (input.reasoningEffort) args.push('-c', `model_reasoning_effort="${EFFORT[input.reasoningEffort]}"`);
    args.push('--', prompt);
    return { command: 'codex', args, env: endpoint.env, files };
  },
  parseLine: jsonLineParser((event) => {
    switch (event.type) {
      case 'item.completed':
        return isObject(event.item) ? itemEvents(event.item) : [];
      case 'turn.completed':
        return turnUsage(event.usage);
      case 'turn.failed':
        return [{ type: 'error', message: text(field(event.error, 'message')) ?? 'turn failed' }];
      case 'error':
        return [problem(text(event.message) ?? 'error')];
      case 'item.started':
      case 'item.updated':
        // the plan is the one item reported while it changes; the rest count once completed
        return isObject(event.item) && text(event.item.type) === 'todo_list' ? todoListProgress(event.item) : [];
      default:
        return []; // thread.started, turn.started
    }
  }),
});
