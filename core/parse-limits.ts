import { MAX_JSON_DEPTH } from './db/storable.ts';

/**
 * Limits on what a request's JSON and a tenant's YAML may make the server parse (docs/security.md):
 * - `max_depth`: nesting refused before any parser runs (request bodies, manifests); at most
 *   MAX_JSON_DEPTH, which is what the database takes anyway;
 * - `off_loop_bytes`: a manifest larger than this (or one that may nest deeper than the scan saw,
 *   core/nesting.ts mayNestBeyond) is parsed and validated in a worker thread, not on the event loop;
 * - `timeout_ms`: how long such a parse may take before the worker is stopped and the request
 *   answered 422.
 * Environment: SVC_PARSE_MAX_DEPTH, SVC_PARSE_OFF_LOOP_BYTES, SVC_PARSE_TIMEOUT_MS.
 */
export interface ParseLimits {
  max_depth: number;
  off_loop_bytes: number;
  timeout_ms: number;
}

export const DEFAULT_PARSE_LIMITS: Readonly<ParseLimits> = { max_depth: MAX_JSON_DEPTH, off_loop_bytes: 16 * 1024, timeout_ms: 5000 };

function whole(raw: string | undefined, fallback: number, min: number, max: number): number {
  const value = raw === undefined || raw.trim() === '' ? NaN : Number(raw);
  return Number.isInteger(value) ? Math.min(max, Math.max(min, value)) : fallback;
}

/** The limits, with what the environment sets (out-of-range values are clamped, unreadable ones ignored). */
export function parseLimits(env: NodeJS.ProcessEnv = process.env): ParseLimits {
  const d = DEFAULT_PARSE_LIMITS;
  return {
    max_depth: whole(env.SVC_PARSE_MAX_DEPTH, d.max_depth, 8, MAX_JSON_DEPTH),
    off_loop_bytes: whole(env.SVC_PARSE_OFF_LOOP_BYTES, d.off_loop_bytes, 0, 1024 * 1024),
    timeout_ms: whole(env.SVC_PARSE_TIMEOUT_MS, d.timeout_ms, 10, 60_000),
  };
}
