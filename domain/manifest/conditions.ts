/**
 * Workflow step `if` conditions: a small expression language, parsed into a tree and evaluated by
 * walking it. No `eval`, no `Function`, and reads go through own data properties of plain objects
 * and arrays only. Pure: nothing here imports the rest of the app. Users' guide: docs/conditions.md.
 *
 * Syntax
 *   literals     42  2.5  1e3  -1  'single'  "double"  true  false  null
 *                strings take escapes \\ \' \" \n \r \t \0 \b \f \v \xHH \uHHHH \u{H…}
 *   paths        inputs.env  event.payload.ref  steps.build.status  steps.build.result.tag
 *                a[0]  a['key']  a[inputs.i]; a path starts with inputs, event or steps;
 *                names may contain '-' after the first character (steps.run-tests.status)
 *   operators    ==  !=  <  <=  >  >=  &&  ||  !  ( )
 *                precedence, loosest first: ||, &&, == !=, < <= > >=, !;
 *                comparisons do not chain (a == b == c is a syntax error)
 *   functions    contains(haystack, needle)   substring of a string, or element of an array
 *                startsWith(s, prefix)  endsWith(s, suffix)
 *                exists(path)                 the path is present (even if its value is null)
 *                len(x)                       characters of a string, elements of an array,
 *                                             keys of an object, 0 for null
 *   wrapper      `${{ expression }}` around the whole condition is accepted and stripped
 *
 * Semantics
 *   - a missing path (or one that walks through a non-container) is null, never an error;
 *   - `==` / `!=` compare type and value (arrays and objects deeply); 1 == '1' is false;
 *   - `<` `<=` `>` `>=` compare two numbers or two strings; any other pair is false;
 *   - `&&` / `||` short-circuit and give booleans; `!` negates truthiness;
 *   - truthiness: null, false, 0, NaN and '' are false, everything else (also [] and {}) is true;
 *     a condition holds when its value is truthy.
 *
 * Safety
 *   - only own data properties of plain objects (prototype Object.prototype or null) and integer
 *     indexes of arrays are read: no getters run, no inherited members, no `length`;
 *   - the keys `__proto__`, `constructor` and `prototype` always give null;
 *   - other values (class instances, functions, Maps, Dates…) read as null;
 *   - text at most MAX_CONDITION_LENGTH characters, nesting at most MAX_CONDITION_DEPTH levels.
 *
 * Errors are ConditionError with a message naming the 0-based position in the text as written,
 * for example `unexpected ')' at 14`.
 */
import { ConditionError } from './conditions-lexer.ts';
import { parseTokens, type FunctionName, type Node, type Root } from './conditions-parser.ts';

export { ConditionError } from './conditions-lexer.ts';
export type { Node as ConditionNode } from './conditions-parser.ts';

export const MAX_CONDITION_LENGTH = 2000;
export const MAX_CONDITION_DEPTH = 50;

/** A parsed condition: the text it came from and its syntax tree. */
export interface Condition {
  readonly source: string;
  readonly ast: Node;
}

/** What a condition can read. Each root is usually a JSON-like object; missing roots read as null. */
export interface ConditionContext {
  inputs?: unknown;
  event?: unknown;
  steps?: unknown;
}

/** Values the language works with (containers are read lazily and checked on every access). */
type Value = null | boolean | number | string | readonly unknown[] | Readonly<Record<string, unknown>>;

const MISSING = Symbol('missing');
const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Parses a condition. A YAML boolean (`if: false`) is accepted as the constant it is.
 * Throws ConditionError for syntax errors and exceeded limits.
 */
export function parseCondition(text: string | boolean): Condition {
  if (typeof text === 'boolean') return { source: String(text), ast: { type: 'literal', value: text, pos: 0 } };
  if (typeof text !== 'string') throw new ConditionError('condition must be a string expression or a boolean');
  if (text.length > MAX_CONDITION_LENGTH) {
    throw new ConditionError(`condition is too long (${text.length} characters, limit ${MAX_CONDITION_LENGTH})`);
  }
  const [start, end] = unwrap(text);
  return { source: text, ast: parseTokens(text, start, end, { maxDepth: MAX_CONDITION_DEPTH }) };
}

/** The error message for an invalid condition, or null when it parses: for the manifest validator. */
export function checkCondition(text: unknown): string | null {
  try {
    parseCondition(text as string | boolean);
    return null;
  } catch (err) {
    if (err instanceof ConditionError) return err.message;
    throw err;
  }
}

/** Whether the condition holds in `context`. Never throws for missing or odd data. */
export function evaluateCondition(cond: Condition | string, context: ConditionContext): boolean {
  const parsed = typeof cond === 'string' ? parseCondition(cond) : cond;
  return truthy(evaluate(parsed.ast, context));
}

/**
 * The step names a condition reads through `steps.<name>` (or `steps['<name>']`), in order of
 * first appearance: the validator can check they are earlier steps, the planner can wait for them.
 */
export function referencedSteps(cond: Condition): string[] {
  const names: string[] = [];
  const visit = (node: Node): void => {
    switch (node.type) {
      case 'path': {
        const first = node.segments[0];
        if (node.root === 'steps' && first) {
          const name = first.kind === 'key' ? first.key : first.expr.type === 'literal' && typeof first.expr.value === 'string' ? first.expr.value : null;
          if (name !== null && !names.includes(name)) names.push(name);
        }
        for (const s of node.segments) if (s.kind === 'index') visit(s.expr);
        return;
      }
      case 'not':
        return visit(node.operand);
      case 'and':
      case 'or':
        return node.operands.forEach(visit);
      case 'compare':
        visit(node.left);
        return visit(node.right);
      case 'call':
        return node.args.forEach(visit);
      case 'literal':
        return;
    }
  };
  visit(cond.ast);
  return names;
}

/** The range of `text` to parse: all of it, or the inside of a `${{ … }}` wrapper. */
function unwrap(text: string): [number, number] {
  let start = 0;
  let end = text.length;
  while (start < end && /\s/.test(text[start])) start++;
  while (end > start && /\s/.test(text[end - 1])) end--;
  if (!text.startsWith('${{', start)) return [0, text.length];
  if (end - start < 5 || !text.endsWith('}}', end)) {
    throw new ConditionError(`unterminated '\${{' at ${start} (expected '}}' at the end)`, start);
  }
  return [start + 3, end - 2];
}

// ---------------------------------------------------------------------------------------------
// Evaluation

function evaluate(node: Node, ctx: ConditionContext): Value {
  switch (node.type) {
    case 'literal':
      return node.value;
    case 'path': {
      const v = resolve(node, ctx);
      return v === MISSING ? null : v;
    }
    case 'not':
      return !truthy(evaluate(node.operand, ctx));
    case 'and':
      return node.operands.every((n) => truthy(evaluate(n, ctx)));
    case 'or':
      return node.operands.some((n) => truthy(evaluate(n, ctx)));
    case 'compare':
      return compare(node.op, evaluate(node.left, ctx), evaluate(node.right, ctx));
    case 'call':
      return call(node.fn, node.args, ctx);
  }
}

function truthy(v: Value): boolean {
  return !(v === null || v === false || v === 0 || v === '' || (typeof v === 'number' && Number.isNaN(v)));
}

/** A path's value, or MISSING when any step of it is absent or not readable. */
function resolve(node: Node & { type: 'path' }, ctx: ConditionContext): Value | typeof MISSING {
  let current: Value | typeof MISSING = readOwn(ctx as Record<string, unknown>, node.root satisfies Root);
  for (const segment of node.segments) {
    if (current === MISSING) return MISSING;
    const key = segment.kind === 'key' ? segment.key : evaluate(segment.expr, ctx);
    current = member(current, key);
  }
  return current;
}

/** `container[key]` under the safety rules. */
function member(container: Value, key: Value): Value | typeof MISSING {
  if (Array.isArray(container)) {
    return typeof key === 'number' && Number.isInteger(key) && key >= 0 && key < container.length ? readOwn(container, String(key)) : MISSING;
  }
  if (!isPlainObject(container)) return MISSING;
  if (typeof key === 'number' && Number.isInteger(key)) return readOwn(container, String(key));
  return typeof key === 'string' ? readOwn(container, key) : MISSING;
}

/** An own data property, normalized; never a getter, never an inherited or forbidden key. */
function readOwn(obj: object, key: string): Value | typeof MISSING {
  if (FORBIDDEN_KEYS.has(key) || !Object.hasOwn(obj, key)) return MISSING;
  const desc = Object.getOwnPropertyDescriptor(obj, key);
  if (!desc || !('value' in desc) || desc.value === undefined) return MISSING;
  return normalize(desc.value);
}

function isPlainObject(v: unknown): v is Readonly<Record<string, unknown>> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** JSON-like values pass; anything else (functions, class instances, bigint, symbols) reads as null. */
function normalize(v: unknown): Value {
  if (v === null || typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number') return v;
  if (Array.isArray(v) || isPlainObject(v)) return v;
  return null;
}

/** Readable own keys of a plain object (the forbidden ones are invisible, as on reads). */
function ownKeys(obj: Readonly<Record<string, unknown>>): string[] {
  return Object.keys(obj).filter((k) => !FORBIDDEN_KEYS.has(k) && readOwn(obj, k) !== MISSING);
}

/** Elements of an array as values (holes and undefined read as null). */
function elements(arr: readonly unknown[]): Value[] {
  const out: Value[] = [];
  for (let i = 0; i < arr.length; i++) {
    const v = readOwn(arr, String(i));
    out.push(v === MISSING ? null : v);
  }
  return out;
}

const MAX_EQUAL_DEPTH = 64;

/** Same type and value; arrays and plain objects compared element by element. */
function equal(a: Value, b: Value, depth = 0): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (depth >= MAX_EQUAL_DEPTH) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return false;
    const [x, y] = [elements(a), elements(b)];
    return x.length === y.length && x.every((v, i) => equal(v, y[i], depth + 1));
  }
  const ra = a as Readonly<Record<string, unknown>>;
  const rb = b as Readonly<Record<string, unknown>>;
  const [ka, kb] = [ownKeys(ra), ownKeys(rb)];
  return (
    ka.length === kb.length &&
    ka.every((k) => {
      const vb = readOwn(rb, k);
      return vb !== MISSING && equal(readOwn(ra, k) as Value, vb, depth + 1);
    })
  );
}

function compare(op: string, a: Value, b: Value): boolean {
  switch (op) {
    case '==':
      return equal(a, b);
    case '!=':
      return !equal(a, b);
  }
  const ordered = (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
  if (!ordered) return false;
  const [x, y] = [a as number | string, b as number | string];
  switch (op) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    case '>=':
      return x >= y;
  }
  return false;
}

function call(fn: FunctionName, args: Node[], ctx: ConditionContext): Value {
  if (fn === 'exists') return resolve(args[0] as Node & { type: 'path' }, ctx) !== MISSING;
  const values = args.map((a) => evaluate(a, ctx));
  switch (fn) {
    case 'contains': {
      const [haystack, needle] = values;
      if (typeof haystack === 'string') return typeof needle === 'string' && haystack.includes(needle);
      if (Array.isArray(haystack)) return elements(haystack).some((v) => equal(v, needle));
      return false;
    }
    case 'startsWith':
      return typeof values[0] === 'string' && typeof values[1] === 'string' && values[0].startsWith(values[1]);
    case 'endsWith':
      return typeof values[0] === 'string' && typeof values[1] === 'string' && values[0].endsWith(values[1]);
    case 'len': {
      const [x] = values;
      if (x === null) return 0;
      if (typeof x === 'string') return [...x].length;
      if (Array.isArray(x)) return x.length;
      if (isPlainObject(x)) return ownKeys(x).length;
      return null;
    }
  }
}
