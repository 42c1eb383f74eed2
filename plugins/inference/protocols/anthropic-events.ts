import { anthropicUsage } from '../providers/anthropic-stream.ts';
import { parseJson, type WireEvent } from '../providers/sse.ts';
import { noUsage, tokenCount, type StreamTranslator, type TokenUsage } from '../providers/types.ts';

/** An Anthropic event frame: `event:` and `data:` with the same type. */
export const anthropicFrame = (type: string, data: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** Usage in Anthropic's shape from disjoint counts (input excludes cache reads and writes, as Anthropic counts). */
export const anthropicUsageOf = (u: TokenUsage) => ({
  input_tokens: u.input_tokens,
  output_tokens: u.output_tokens,
  cache_read_input_tokens: u.cache_read_tokens,
  cache_creation_input_tokens: u.cache_write_tokens,
});

/**
 * An Anthropic target's event stream passed to an Anthropic-speaking caller unchanged, frame by
 * frame; usage is read on the way (`message_start` for input and cache, `message_delta` for output
 * and any counts it repeats), `message_stop` completes it and an `error` event is the call's error.
 */
export class AnthropicPassThrough implements StreamTranslator {
  complete = false;
  error: string | null = null;
  usage = noUsage();

  event(e: WireEvent): string[] {
    const data = parseJson(e.data) as Record<string, any> | undefined;
    switch (data?.type ?? e.event) {
      case 'message_start':
        this.usage = anthropicUsage(data?.message?.usage);
        break;
      case 'message_delta':
        if (data?.usage) {
          const later = Object.fromEntries(Object.entries(anthropicUsage(data.usage)).filter(([, v]) => v > 0));
          this.usage = { ...this.usage, ...later, output_tokens: tokenCount(data.usage.output_tokens) };
        }
        break;
      case 'message_stop':
        this.complete = true;
        break;
      case 'error':
        this.error = String(data?.error?.message ?? 'upstream error');
        break;
    }
    return [e.raw];
  }
}
