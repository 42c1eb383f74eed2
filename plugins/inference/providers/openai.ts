import { DONE_FRAME, parseJson, type WireEvent } from './sse.ts';
import { noUsage, tokenCount, type ChatRequest, type ProviderAdapter, type StreamTranslator, type TokenUsage } from './types.ts';

/** Chat-completions usage into disjoint classes: prompt tokens include the cached ones, completion tokens the reasoning ones. */
export function openAiUsage(raw: unknown): TokenUsage {
  const u = (raw ?? {}) as Record<string, any>;
  const cached = tokenCount(u.prompt_tokens_details?.cached_tokens);
  return {
    input_tokens: Math.max(0, tokenCount(u.prompt_tokens) - cached),
    output_tokens: tokenCount(u.completion_tokens),
    cache_read_tokens: cached,
    cache_write_tokens: 0,
    reasoning_tokens: tokenCount(u.completion_tokens_details?.reasoning_tokens),
  };
}

/**
 * Passes an OpenAI-compatible stream through event by event. The proxy asks the upstream for usage
 * (`stream_options.include_usage`) so every call is counted; when the client did not ask for it,
 * the usage-only chunk is kept from it.
 */
class PassThroughStream implements StreamTranslator {
  complete = false;
  error: string | null = null;
  usage = noUsage();

  constructor(private readonly clientWantsUsage: boolean) {}

  event(e: WireEvent): string[] {
    if (e.data === '') return [e.raw];
    if (e.data.trim() === '[DONE]') {
      this.complete = true;
      return [DONE_FRAME];
    }
    const chunk = parseJson(e.data) as Record<string, any> | undefined;
    if (chunk?.error) this.error = String(chunk.error.message ?? JSON.stringify(chunk.error));
    if (chunk?.usage) {
      this.usage = openAiUsage(chunk.usage);
      if (!this.clientWantsUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0) return [];
    }
    return [e.raw];
  }
}

export const openAiAdapter: ProviderAdapter = {
  kind: 'openai',
  description: 'OpenAI-compatible chat completions (POST {base_url}/chat/completions, GET {base_url}/models; bearer key)',
  headers: (apiKey): Record<string, string> => (apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
  chatPath: '/chat/completions',
  modelsPath: '/models',
  modelIds: (body) => ((body as { data?: { id?: unknown }[] })?.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string'),
  chatRequest(request: ChatRequest, upstreamModel: string) {
    if (!request.stream) return { ...request, model: upstreamModel };
    return { ...request, model: upstreamModel, stream_options: { ...request.stream_options, include_usage: true } };
  },
  chatResponse: (body) => ({ body, usage: openAiUsage((body as { usage?: unknown })?.usage) }),
  errorBody: (_status, body) => body,
  stream: (request) => new PassThroughStream(request.stream_options?.include_usage === true),
};
