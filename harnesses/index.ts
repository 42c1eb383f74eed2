/** The built-in harnesses, harness_a … harness_f, from their settings in config (`harnesses.<id>`). */
import type { HarnessDefinition } from '../core/ports/harness.ts';
import { harnessA } from './harness_a/index.ts';
import { harnessB } from './harness_b/index.ts';
import { harnessC } from './harness_c/index.ts';
import { harnessD } from './harness_d/index.ts';
import { harnessE } from './harness_e/index.ts';
import { harnessF } from './harness_f/index.ts';

export const BUILT_IN_HARNESS_IDS = ['harness_a', 'harness_b', 'harness_c', 'harness_d', 'harness_e', 'harness_f'] as const;

export function builtInHarnesses(settings: { harness_a?: { mcp_servers?: Record<string, unknown> } } = {}): HarnessDefinition[] {
  return [harnessA({ mcpServers: settings.harness_a?.mcp_servers ?? {} }), harnessB, harnessC, harnessD, harnessE, harnessF];
}
