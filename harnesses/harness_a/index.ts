/**
 * harness_a: assistant CLI 1 (Claude Code) with tool servers and skills. Everything it adds lives
 * under `.svc/harness_a/` in the workspace, loaded for this run only: a plugin directory
 * (`--plugin-dir`) holding the svc job skill, and the MCP servers from config
 * (`harnesses.harness_a.mcp_servers`, Claude's `mcpServers` format) through `--mcp-config` with
 * `--strict-mcp-config`, so no other server the machine knows is started.
 */
import type { HarnessDefinition } from '../../core/ports/harness.ts';
import { defineHarness } from '../../core/sdk.ts';
import { CLAUDE_CAPABILITIES, CLAUDE_COMMAND, CLAUDE_VERSIONS, CLAUDE_CREDENTIALS, claudeInvocation, parseClaudeLine } from '../common/claude-code.ts';

export interface HarnessAOptions {
  /** Server name → `{command, args, env}` or `{type: 'http', url, headers}` as the CLI reads them. */
  mcpServers: Record<string, unknown>;
}

const DIR = '.svc/harness_a';
const PLUGIN_DIR = `${DIR}/plugin`;
const MCP_CONFIG = `${DIR}/mcp.json`;

const SKILL = `---
name: svc-job
description: How to work as an svc job - where the task context lives and how to report the outcome. Use at the start and at the end of every task.
---

# Working as an svc job

- The job's environment names it: SVC_JOB_ID, SVC_ATTEMPT_ID, SVC_PROJECT_ID, SVC_PARENT_JOB_ID.
- Resources attached to the job are under .svc/resources/; SVC_RESOURCE_INDEX names their index.json.
- When .svc/coordination-inbox.md exists, read it first: it holds messages from the coordinating job.
- SVC_API_URL with the bearer token SVC_JOB_TOKEN reaches the svc API for this job only.
- Never commit anything under .svc/.

## Reporting the outcome

End your final message with one fenced block labelled json-result whose body is a JSON object:

\`\`\`json-result
{"svc": {"status": "success", "summary": "what changed, in one or two sentences"}}
\`\`\`

status is success, waiting (blocked on something outside your control; say what in reason) or
failed (add reason). Only the last such block counts.
`;

const PLUGIN_MANIFEST = JSON.stringify({ name: 'svc', version: '1.0.0', description: 'svc job conventions for agents run by svc' }, null, 2);

export function harnessA(options: HarnessAOptions): HarnessDefinition {
  const servers = options.mcpServers ?? {};
  const withTools = Object.keys(servers).length > 0;
  return defineHarness({
    id: 'harness_a',
    description: 'Assistant CLI 1 (Claude Code) with tool servers (MCP, from config) and the svc job skill',
    command: CLAUDE_COMMAND,
    variants: [
      { name: 'full', description: 'The svc skill and the configured tool servers (the default)' },
      { name: 'skills', description: 'The svc skill only; no tool servers are started' },
    ],
    versions: CLAUDE_VERSIONS,
    speaks: 'anthropic',
    capabilities: CLAUDE_CAPABILITIES,
    credentials: CLAUDE_CREDENTIALS,
    build(input) {
      const files: Record<string, string> = {
        [`${PLUGIN_DIR}/.claude-plugin/plugin.json`]: PLUGIN_MANIFEST,
        [`${PLUGIN_DIR}/skills/svc-job/SKILL.md`]: SKILL,
      };
      const args = ['--plugin-dir', PLUGIN_DIR];
      if (withTools && input.variant !== 'skills') {
        files[MCP_CONFIG] = JSON.stringify({ mcpServers: servers }, null, 2);
        args.push('--mcp-config', MCP_CONFIG, '--strict-mcp-config');
      }
      return claudeInvocation(input, { args, files });
    },
    parseLine: parseClaudeLine,
  });
}
