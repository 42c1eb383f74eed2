import pino, { type Logger } from 'pino';

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

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'svc' }, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, destination);
}
