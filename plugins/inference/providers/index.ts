import type { ProviderKind } from '../../../core/ports/inference.ts';
import { anthropicAdapter } from './anthropic.ts';
import { openAiAdapter } from './openai.ts';
import type { ProviderAdapter } from './types.ts';

/** The wire formats the proxy speaks, by kind. */
export const PROVIDER_ADAPTERS: Readonly<Record<ProviderKind, ProviderAdapter>> = Object.freeze({ openai: openAiAdapter, anthropic: anthropicAdapter });

export const adapterFor = (kind: ProviderKind): ProviderAdapter => PROVIDER_ADAPTERS[kind];
