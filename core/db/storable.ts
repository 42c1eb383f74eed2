/**
 * What PostgreSQL (text and jsonb) and V8 cannot take, found before a value reaches either: a NUL
 * character (text and jsonb refuse U+0000), a lone UTF-16 surrogate (jsonb refuses its escape; text
 * would silently turn it into U+FFFD), and JSON nested deeper than MAX_JSON_DEPTH (jsonb's parser
 * and V8's JSON.stringify recurse, and fail far below the body size limit's ~400,000 levels).
 */
export const MAX_JSON_DEPTH = 64;

export interface Unstorable {
  /** Dotted path of the offending value (`hints.step.script.run`, `labels[2]`); '' for the value itself. */
  path: string;
  problem: string;
}

const NUL = /\u0000/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function stringProblem(s: string): string | null {
  if (NUL.test(s)) return 'contains a NUL character (\\u0000)';
  if (LONE_SURROGATE.test(s)) return 'contains a lone UTF-16 surrogate (not valid Unicode)';
  return null;
}

const join = (path: string, key: string | number) => (typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key);

/**
 * The first part of `value` that cannot be stored, or null. Walks at most MAX_JSON_DEPTH levels
 * (so it never recurses deeply itself); object keys are checked like strings. Buffers are bytes,
 * not text, and are left alone. `only: 'depth'` looks at the nesting alone.
 */
export function findUnstorable(value: unknown, path = '', only?: 'depth'): Unstorable | null {
  return walk(value, path, 0, only === 'depth');
}

function walk(value: unknown, path: string, depth: number, depthOnly: boolean): Unstorable | null {
  if (typeof value === 'string') {
    const problem = depthOnly ? null : stringProblem(value);
    return problem ? { path, problem } : null;
  }
  if (typeof value !== 'object' || value === null || Buffer.isBuffer(value) || value instanceof Date) return null;
  if (depth >= MAX_JSON_DEPTH) return { path, problem: `is nested more than ${MAX_JSON_DEPTH} levels deep` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = walk(value[i], join(path, i), depth + 1, depthOnly);
      if (found) return found;
    }
    return null;
  }
  for (const [key, v] of Object.entries(value)) {
    const keyProblem = depthOnly ? null : stringProblem(key);
    if (keyProblem) return { path: join(path, JSON.stringify(key).slice(1, -1)), problem: `has a key that ${keyProblem}` };
    const found = walk(v, join(path, key), depth + 1, depthOnly);
    if (found) return found;
  }
  return null;
}

/** "`hints.a` contains a NUL character (\u0000)": the path shortened when it is very long (deep nesting). */
export function describeUnstorable(u: Unstorable, what = 'the value'): string {
  const path = u.path.length > 120 ? `${u.path.slice(0, 117)}...` : u.path;
  return `${path || what} ${u.problem}`;
}

/**
 * Text from outside (a process's output, a webhook receiver's answer) made storable rather than
 * refused: NUL and lone surrogates become U+FFFD, as an invalid byte does when decoded.
 */
export function storableText(s: string): string {
  return s.replace(/\u0000/g, '\uFFFD').replace(new RegExp(LONE_SURROGATE, 'g'), '\uFFFD');
}
