import type { InjectionToken } from 'tsyringe';
/** A coding CLI: how to invoke it, and how to read what it prints. It never spawns anything itself. */
export interface HarnessInput {
  prompt: string;
  workspace: string;
  model?: string;
  reasoningEffort?: 'low' | 'medium' | 'high' | 'x-high';
  variant?: string;
  permissionPolicy: 'default' | 'auto_edit' | 'never' | 'yolo';
  env: Record<string, string>;
}

export interface HarnessInvocation {
  command: string;
  args: string[];
  env: Record<string, string>;
  files: Record<string, string>;
}

export type HarnessEvent =
  | { type: 'message'; text: string }
  | { type: 'tool'; name: string; input?: unknown }
  | { type: 'usage'; model?: string; inputTokens: number; outputTokens: number; cacheTokens?: number; reasoningTokens?: number }
  | { type: 'error'; message: string }
  | { type: 'raw'; text: string };

export interface HarnessDefinition {
  id: string;
  aliases?: string[];
  description: string;
  build(input: HarnessInput): HarnessInvocation;
  parseLine(line: string): HarnessEvent[];
}

/** The harnesses this server knows (built-in and from plugins), by id or alias. Registered by the harnesses plugin. */
export interface HarnessRegistry {
  get(idOrAlias: string): HarnessDefinition | undefined;
  list(): HarnessDefinition[];
}

export const HarnessRegistryToken = Symbol('HarnessRegistry') as InjectionToken<HarnessRegistry>;
