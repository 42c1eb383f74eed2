import { DONE_FRAME, dataFrame, parseJson, type WireEvent } from './sse.ts';
import { noUsage, tokenCount, type StreamTranslator, type TokenUsage } from './types.ts';

const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  pause_turn: 'stop',
  refusal: 'content_filter',
};

export const finishReason = (stop: unknown): string | null => (typeof stop === 'string' ? (FINISH[stop] ?? 'stop') : null);

export function anthropicUsage(raw: unknown): TokenUsage {
  const u = (raw ?? {}) as Record<string, unknown>;
  return {
    input_tokens: tokenCount(u.input_tokens),
    output_tokens: tokenCount(u.output_tokens),
    cache_read_tokens: tokenCount(u.cache_read_input_tokens),
    cache_write_tokens: tokenCount(u.cache_creation_input_tokens),
    reasoning_tokens: 0,
  };
}

/**
 * Anthropic's message stream as chat-completion chunks, one out for each event that carries
 * something: text deltas as `content`, tool_use blocks as `tool_calls` (name first, then the
 * argument JSON in pieces), the stop reason as `finish_reason`, and `[DONE]` after `message_stop`.
 * Usage comes from `message_start` (input and cache) and `message_delta` (output so far).
 */
export class AnthropicStream implements StreamTranslator {
  complete = false;
  error: string | null = null;
  usage = noUsage();
  private id = '';
  private model = '';
  private readonly created = Math.floor(Date.now() / 1000);
  /** Anthropic block index → chat-completions tool call index. */
  private readonly toolIndex = new Map<number, number>();

  constructor(private readonly clientWantsUsage: boolean) {}

  event(e: WireEvent): string[] {
    const data = parseJson(e.data) as Record<string, any> | undefined;
    if (!data) return [];
    switch (data.type ?? e.event) {
      case 'message_start': {
        this.id = data.message?.id ?? '';
        this.model = data.message?.model ?? '';
        this.usage = { ...anthropicUsage(data.message?.usage), output_tokens: tokenCount(data.message?.usage?.output_tokens) };
        return [this.chunk({ role: 'assistant', content: '' })];
      }
      case 'content_block_start': {
        const block = data.content_block ?? {};
        if (block.type !== 'tool_use') return [];
        const index = this.toolIndex.size;
        this.toolIndex.set(data.index, index);
        return [this.chunk({ tool_calls: [{ index, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] })];
      }
      case 'content_block_delta': {
        const delta = data.delta ?? {};
        if (delta.type === 'text_delta') return [this.chunk({ content: delta.text ?? '' })];
        if (delta.type === 'input_json_delta' && this.toolIndex.has(data.index)) {
          return [this.chunk({ tool_calls: [{ index: this.toolIndex.get(data.index), function: { arguments: delta.partial_json ?? '' } }] })];
        }
        return [];
      }
      case 'message_delta': {
        if (data.usage) this.usage = { ...this.usage, ...nonZero(anthropicUsage(data.usage)), output_tokens: tokenCount(data.usage.output_tokens) };
        return [this.chunk({}, finishReason(data.delta?.stop_reason))];
      }
      case 'message_stop': {
        this.complete = true;
        const frames = this.clientWantsUsage ? [dataFrame({ ...this.base(), choices: [], usage: this.chatUsage() })] : [];
        return [...frames, DONE_FRAME];
      }
      case 'error': {
        this.error = String(data.error?.message ?? 'upstream error');
        return [dataFrame({ error: { message: this.error, type: data.error?.type ?? 'upstream_error', code: null } })];
      }
      default:
        return []; // ping, content_block_stop, thinking and other blocks chat completions has no place for
    }
  }

  private base() {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model };
  }

  private chunk(delta: Record<string, unknown>, finish: string | null = null): string {
    return dataFrame({ ...this.base(), choices: [{ index: 0, delta, finish_reason: finish }] });
  }

  private chatUsage() {
    const u = this.usage;
    const prompt = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
    return {
      prompt_tokens: prompt,
      completion_tokens: u.output_tokens,
      total_tokens: prompt + u.output_tokens,
      prompt_tokens_details: { cached_tokens: u.cache_read_tokens },
    };
  }
}

/** Only the counts a later event actually reports (message_delta may repeat input counts or leave them out). */
function nonZero(usage: TokenUsage): Partial<TokenUsage> {
  return Object.fromEntries(Object.entries(usage).filter(([, v]) => v > 0));
}
