/** Small readers shared by the stream parsers: every CLI here prints one JSON object per line. */
import type { HarnessEvent } from '../../core/ports/harness.ts';
import { isObject } from '../../core/is-object.ts';

export type Json = Record<string, unknown>;

export { isObject };

/** The line as a JSON object, or null for anything else (plain text, arrays, truncated JSON). */
export function jsonObject(line: string): Json | null {
  const trimmed = line.trim();
  if (!trimmed.startsWith('{')) return null;
  try {
    const value: unknown = JSON.parse(trimmed);
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

export const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A token count: a finite non-negative integer, else 0. */
export const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

export const field = (v: unknown, key: string): unknown => (isObject(v) ? v[key] : undefined);

/**
 * Wraps a parser of JSON objects: non-JSON lines (CLI banners, stderr) become raw events, blank lines
 * nothing, and a parser bug on an odd object never escapes (the line is kept raw instead).
 */
export function jsonLineParser(parse: (event: Json) => HarnessEvent[]): (line: string) => HarnessEvent[] {
  return (line: string) => {
    if (typeof line !== 'string' || line.trim() === '') return [];
    const event = jsonObject(line);
    if (!event) return [{ type: 'raw', text: line }];
    try {
      return parse(event);
    } catch {
      return [{ type: 'raw', text: line }];
    }
  };
}

/** A usage event with only the counts that are present. */
export function usage(u: {
  model?: string;
  input: unknown;
  output: unknown;
  cacheRead?: unknown;
  cacheWrite?: unknown;
  reasoning?: unknown;
  costUsd?: unknown;
  durationMs?: unknown;
}): HarnessEvent {
  const event: Extract<HarnessEvent, { type: 'usage' }> = { type: 'usage', inputTokens: count(u.input), outputTokens: count(u.output) };
  if (u.model) event.model = u.model;
  if (count(u.cacheRead)) event.cacheReadTokens = count(u.cacheRead);
  if (count(u.cacheWrite)) event.cacheWriteTokens = count(u.cacheWrite);
  if (count(u.reasoning)) event.reasoningTokens = count(u.reasoning);
  if (count(u.durationMs)) event.durationMs = count(u.durationMs);
  if (typeof u.costUsd === 'number' && Number.isFinite(u.costUsd) && u.costUsd >= 0) event.costUsd = u.costUsd;
  return event;
}
