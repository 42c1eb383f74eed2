import Joi from 'joi';

/** A worker type name as `hints.worker_type` carries it (python-worker, rust-worker, …). */
export const WORKER_TYPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/**
 * `SVC_WORKER_URLS` as written in an environment: a JSON object (`{"python-worker":"http://…"}`) or
 * `type=url` pairs separated by commas (`python-worker=http://py:4701,rust-worker=http://rs:4701`).
 * Throws with what is wrong; entries are checked by `workerUrlsProblems`.
 */
export function parseWorkerUrls(raw: string): Record<string, unknown> {
  const text = raw.trim();
  if (text === '') return {};
  if (text.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw new Error(`not valid JSON: ${(e as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('the JSON must be an object of worker type to URL');
    return parsed as Record<string, unknown>;
  }
  const out: Record<string, unknown> = {};
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`'${pair}' is not type=url`);
    const type = pair.slice(0, eq).trim();
    if (type in out) throw new Error(`worker type '${type}' is named twice`);
    out[type] = pair.slice(eq + 1).trim();
  }
  return out;
}

/** What is wrong with a worker type → URL map: names that are not worker types, values that are not http(s) URLs. */
export function workerUrlsProblems(urls: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [type, url] of Object.entries(urls)) {
    if (!WORKER_TYPE_PATTERN.test(type)) problems.push(`'${type}' is not a worker type name (letters, digits, '.', '_', '-')`);
    let parsed: URL | null = null;
    try {
      parsed = typeof url === 'string' ? new URL(url) : null;
    } catch {
      parsed = null;
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.search || parsed.hash || parsed.username || parsed.password) {
      problems.push(`the URL of worker type '${type}' must be an http(s) base URL without credentials, query or fragment (got ${JSON.stringify(url)})`);
    }
  }
  return problems;
}

const WorkerUrlsJoi = Joi.extend({
  type: 'workerUrls',
  base: Joi.object(),
  messages: {
    'workerUrls.malformed': '{{#label}} must be a JSON object or type=url pairs separated by commas: {{#problem}}',
    'workerUrls.invalid': '{{#label}}: {{#problem}}',
  },
  coerce: {
    from: 'string',
    method(value: string, helpers) {
      try {
        return { value: parseWorkerUrls(value) };
      } catch (e) {
        return { errors: [helpers.error('workerUrls.malformed', { problem: (e as Error).message })] };
      }
    },
  },
  validate(value: Record<string, unknown>, helpers) {
    const problems = workerUrlsProblems(value);
    if (problems.length) return { value, errors: [helpers.error('workerUrls.invalid', { problem: problems.join('; ') })] };
    return { value: Object.fromEntries(Object.entries(value).map(([type, url]) => [type, String(url).replace(/\/+$/, '')])) };
  },
}) as Joi.Root & { workerUrls(): Joi.ObjectSchema };

/** `worker.urls`: a mapping in a config file, or the string forms of `parseWorkerUrls` from the environment (empty: no remote workers). */
export const workerUrlsSchema = WorkerUrlsJoi.workerUrls().empty(null).default({});
