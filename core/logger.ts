import pino, { type Logger } from 'pino';
import { prettyStream } from './log-format.ts';

/** Paths never logged in clear: tokens, keys, secret values, wherever they appear in a log object. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'token',
  '*.token',
  'access_token',
  '*.access_token',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'value',
  '*.value',
  'private_key',
  '*.private_key',
  'master_key',
  '*.master_key',
  'internal_api_key',
  '*.internal_api_key',
];

export type LogFormat = 'auto' | 'pretty' | 'json';

/**
 * Where log records go in `format`: JSON lines (for collectors), or one readable line per record
 * (core/log-format.ts); `auto` is readable on a terminal and JSON otherwise. Redaction happens
 * before either.
 */
export function logDestination(format: LogFormat, out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout): pino.DestinationStream | undefined {
  const pretty = format === 'pretty' || (format === 'auto' && out.isTTY === true);
  if (pretty) return prettyStream(out);
  return out === process.stdout ? undefined : out;
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'svc' }, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, destination);
}
