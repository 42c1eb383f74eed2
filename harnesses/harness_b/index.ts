/** harness_b: the official assistant CLI 1 (Claude Code) in headless print mode, as it ships. */
import type { HarnessDefinition } from '../../core/ports/harness.ts';
import { defineHarness } from '../../core/sdk.ts';
import { CLAUDE_CAPABILITIES, CLAUDE_COMMAND, CLAUDE_VERSIONS, CLAUDE_CREDENTIALS, claudeInvocation, parseClaudeLine } from '../common/claude-code.ts';

export const harnessB: HarnessDefinition = defineHarness({
  id: 'harness_b',
  description: 'The official assistant CLI 1 (Claude Code), headless with the stream-json output',
  command: CLAUDE_COMMAND,
  variants: [],
  versions: CLAUDE_VERSIONS,
  speaks: 'anthropic',
  capabilities: CLAUDE_CAPABILITIES,
  credentials: CLAUDE_CREDENTIALS,
  build: (input) => claudeInvocation(input),
  parseLine: parseClaudeLine,
});
