/** harness_d: CLI 2 (OpenAI Codex CLI), non-interactive `codex exec --json`, as docs/harnesses.md describes. */
import type { HarnessDefinition, HarnessEvent, PermissionPolicy, ReasoningEffort } from '../../core/ports/harness.ts';
import { defineHarness } from '../../core/sdk.ts';
import { count, field, isObject, jsonLineParser, text, usage, type Json } from '../common/lines.ts';
import { promptArgument } from '../common/prompt.ts';
import { planProgress } from '../../core/harness-progress.ts';

/** exec never prompts; the policies choose the sandbox. never = read-only, nothing escalates. */
const POLICY_ARGS: Record<PermissionPolicy, string[]> = {
  default: [],
  auto_edit: ['--full-auto'],
  never: ['--sandbox', 'read-only', '-c', 'approval_policy="never"'],
  yolo: ['--dangerously-bypass-approvals-and-sandbox'],
};

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
      return [{ type: 'error', message: text(item.message) ?? 'error' }];
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
    files: ['.codex/auth.json'],
    instructions: [
      'Set OPENAI_API_KEY (or CODEX_API_KEY) in the server environment or as a system secret.',
      'Or log in once with `codex login` as the user that runs jobs (stores ~/.codex/auth.json).',
    ],
  },
  build(input) {
    const files: Record<string, string> = {};
    const prompt = promptArgument(input.prompt, files);
    const args = ['exec', '--json', '--skip-git-repo-check', ...(POLICY_ARGS[input.permissionPolicy] ?? [])];
    if (input.model) args.push('--model', input.model);
    if (input.reasoningEffort) args.push('-c', `model_reasoning_effort="${EFFORT[input.reasoningEffort]}"`);
    args.push('--', prompt);
    return { command: 'codex', args, env: { ...input.env }, files };
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
        return [{ type: 'error', message: text(event.message) ?? 'error' }];
      case 'item.started':
      case 'item.updated':
        // the plan is the one item reported while it changes; the rest count once completed
        return isObject(event.item) && text(event.item.type) === 'todo_list' ? todoListProgress(event.item) : [];
      default:
        return []; // thread.started, turn.started
    }
  }),
});
