import { parseJson, type WireEvent } from '../providers/sse.ts';
import type { StreamTranslator } from '../providers/types.ts';
import type { ChatStreamWriter } from './types.ts';

/**
 * A target's stream made chat-completion chunks by its adapter (as for the chat route), then
 * written in the caller's protocol. Completion, error and usage are the adapter's: the upstream's
 * own counts. An error chunk inside the stream is left to the gateway, which ends the caller's
 * stream with its protocol's error event.
 */
export function translatedStream(inner: StreamTranslator, writer: ChatStreamWriter | null): StreamTranslator {
  if (!writer) return inner;
  return {
    get complete() {
      return inner.complete;
    },
    get error() {
      return inner.error;
    },
    get usage() {
      return inner.usage;
    },
    event(e: WireEvent): string[] {
      const out: string[] = [];
      for (const frame of inner.event(e)) {
        if (!frame.startsWith('data: ')) continue;
        const data = frame.slice(6).trim();
        if (data === '[DONE]') {
          out.push(...writer.end(inner.usage));
          continue;
        }
        const chunk = parseJson(data) as Record<string, any> | undefined;
        if (chunk && !chunk.error) out.push(...writer.chunk(chunk));
      }
      return out;
    },
  };
}
