/**
 * harness_c: assistant CLI 1 (Claude Code) against another provider: an Anthropic-compatible
 * gateway (ANTHROPIC_BASE_URL), Amazon Bedrock or Google Vertex AI, chosen by the variant or, when
 * none is given, by which provider's credentials the job's environment holds.
 */
import type { HarnessDefinition, HarnessInput } from '../../core/ports/harness.ts';
import { defineHarness } from '../../core/sdk.ts';
import { CLAUDE_CAPABILITIES, CLAUDE_COMMAND, CLAUDE_VERSIONS, claudeInvocation, parseClaudeLine } from '../common/claude-code.ts';

const GATEWAY = [
  ['ANTHROPIC_BASE_URL', 'ANTHROPIC_AUTH_TOKEN'],
  ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY'],
];
const BEDROCK = [
  ['AWS_BEARER_TOKEN_BEDROCK', 'AWS_REGION'],
  ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'],
  ['AWS_PROFILE', 'AWS_REGION'],
];
const VERTEX = [['ANTHROPIC_VERTEX_PROJECT_ID', 'CLOUD_ML_REGION']];

/** The switch each provider needs besides its credentials. */
const PROVIDER_ENV: Record<string, Record<string, string>> = {
  gateway: {},
  bedrock: { CLAUDE_CODE_USE_BEDROCK: '1' },
  vertex: { CLAUDE_CODE_USE_VERTEX: '1' },
};

const satisfied = (groups: string[][], env: Record<string, string>) => groups.some((g) => g.every((name) => Boolean(env[name])));

function provider(input: HarnessInput): string {
  if (input.variant && Object.hasOwn(PROVIDER_ENV, input.variant)) return input.variant;
  if (satisfied(BEDROCK, input.env)) return 'bedrock';
  if (satisfied(VERTEX, input.env)) return 'vertex';
  return 'gateway';
}

export const harnessC: HarnessDefinition = defineHarness({
  id: 'harness_c',
  description: 'Assistant CLI 1 (Claude Code) on an alternative provider: an Anthropic-compatible gateway, Amazon Bedrock or Google Vertex AI',
  command: CLAUDE_COMMAND,
  variants: [
    { name: 'gateway', description: 'Any Anthropic-compatible endpoint: ANTHROPIC_BASE_URL with ANTHROPIC_AUTH_TOKEN (or ANTHROPIC_API_KEY)' },
    { name: 'bedrock', description: 'Amazon Bedrock (CLAUDE_CODE_USE_BEDROCK=1) with AWS credentials and AWS_REGION' },
    { name: 'vertex', description: 'Google Vertex AI (CLAUDE_CODE_USE_VERTEX=1) with ANTHROPIC_VERTEX_PROJECT_ID, CLOUD_ML_REGION and Google credentials' },
  ],
  versions: CLAUDE_VERSIONS,
  speaks: 'anthropic',
  capabilities: {
    ...CLAUDE_CAPABILITIES,
    modelExamples: ['glm-4.6', 'deepseek-chat', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'claude-sonnet-4-5@20250929'],
  },
  credentials: {
    env: [...GATEWAY, ...BEDROCK, ...VERTEX],
    instructions: [
      'Gateway: set ANTHROPIC_BASE_URL and ANTHROPIC_AUTH_TOKEN (or ANTHROPIC_API_KEY) in the server environment, or as system secrets shared with jobs (shared_with_jobs: true).',
      'Bedrock: set AWS_REGION and AWS_BEARER_TOKEN_BEDROCK, or AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY, or AWS_PROFILE.',
      'Vertex AI: set ANTHROPIC_VERTEX_PROJECT_ID and CLOUD_ML_REGION, with Google application default credentials for the user that runs jobs.',
    ],
  },
  build: (input) => claudeInvocation(input, { env: PROVIDER_ENV[provider(input)] }),
  parseLine: parseClaudeLine,
});
