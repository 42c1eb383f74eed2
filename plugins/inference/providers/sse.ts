/** One server-sent event as it came over the wire: its `event` name, its joined `data`, and the raw text to pass on unchanged. */
export interface WireEvent {
  event: string | null;
  data: string;
  raw: string;
}

/**
 * Splits a byte stream into server-sent events as they complete (a blank line ends one), so each
 * can be forwarded the moment it is whole. Comment-only blocks (`: keep-alive`) come out with no data.
 */
export class SseSplitter {
  private buffer = '';
  private readonly decoder = new TextDecoder();

  push(chunk: Uint8Array): WireEvent[] {
    this.buffer += this.decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
    const events: WireEvent[] = [];
    for (let end = this.buffer.indexOf('\n\n'); end >= 0; end = this.buffer.indexOf('\n\n')) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      events.push(parseBlock(block));
    }
    return events;
  }

  /** Whatever is left that never got its blank line (a stream cut mid-event). */
  rest(): string {
    return this.buffer;
  }
}

function parseBlock(block: string): WireEvent {
  let event: string | null = null;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return { event, data: data.join('\n'), raw: `${block}\n\n` };
}

/** A `data:` frame of JSON, as chat-completions streams send them. */
export const dataFrame = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
export const DONE_FRAME = 'data: [DONE]\n\n';

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
