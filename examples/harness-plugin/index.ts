/**
 * A seventh harness for svc, added through config alone (see README.md). It drives `acme-agent`,
 * a small coding CLI that prints one JSON object per line:
 *   {"event":"say","text":…} {"event":"tool","name":…,"args":…}
 *   {"event":"usage","model":…,"prompt_tokens":…,"completion_tokens":…,"cached_tokens":…}
 *   {"event":"fail","message":…}
 * Only types come from svc (a peer dependency), so the package needs nothing installed to load:
 * svc checks the exported definition with its own defineHarness when it loads the plugin.
 */
import type { HarnessDefinition, HarnessEvent, PermissionPolicy } from 'svc';

const MODE: Record<PermissionPolicy, string> = { default: 'ask', auto_edit: 'edit', never: 'readonly', yolo: 'auto' };

function parse(line: string): HarnessEvent[] {
  let e: Record<string, unknown>;
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return line.trim() ? [{ type: 'raw', text: line }] : [];
    e = value as Record<string, unknown>;
  } catch {
    return line.trim() ? [{ type: 'raw', text: line }] : [];
  }
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);
  switch (e.event) {
    case 'say':
      return typeof e.text === 'string' ? [{ type: 'message', text: e.text }] : [];
    case 'tool':
      return typeof e.name === 'string' && e.name ? [{ type: 'tool', name: e.name, input: e.args }] : [];
    case 'usage': {
      const usage: HarnessEvent = { type: 'usage', inputTokens: n(e.prompt_tokens), outputTokens: n(e.completion_tokens) };
      if (typeof e.model === 'string') usage.model = e.model;
      if (n(e.cached_tokens)) usage.cacheReadTokens = n(e.cached_tokens);
      return [usage];
    }
    case 'fail':
      return [{ type: 'error', message: typeof e.message === 'string' ? e.message : 'failed' }];
    default:
      return [];
  }
}

const acme: HarnessDefinition = {
  id: 'acme',
  description: 'acme-agent, an example third-party coding CLI (examples/harness-plugin)',
  command: 'acme-agent',
  variants: [{ name: 'fast', description: 'Shorter plans (--fast)' }],
  capabilities: {
    supportsModel: true,
    modelExamples: ['acme-large', 'acme-small'],
    reasoning: { supported: true, levels: ['low', 'medium', 'high'], mode: 'flag (--effort)' },
  },
  credentials: {
    env: [['ACME_API_KEY']],
    instructions: ['Set ACME_API_KEY in the server environment, or as a system secret shared with jobs (shared_with_jobs: true).'],
  },
  build(input) {
    const args = ['--json', '--mode', MODE[input.permissionPolicy] ?? 'ask'];
    if (input.model) args.push('--model', input.model);
    if (input.reasoningEffort && input.reasoningEffort !== 'x-high') args.push('--effort', input.reasoningEffort);
    if (input.variant === 'fast') args.push('--fast');
    const files: Record<string, string> = {};
    let prompt = input.prompt;
    if (Buffer.byteLength(prompt) > 100_000) {
      files['.acme/task.md'] = prompt;
      prompt = '@.acme/task.md';
    }
    return { command: 'acme-agent', args: [...args, '--', prompt], env: { ...input.env }, files };
  },
  parseLine: parse,
};

export default acme;
