/**
 * Tokenizer for workflow step `if` conditions (see conditions.ts for the language and
 * docs/conditions.md for users). Pure: no imports from the rest of the app.
 *
 * Positions are 0-based character offsets into the condition text as written (including any
 * `${{ … }}` wrapper), so an error points at the same place the author sees.
 */

/** A syntax or limit error in a condition; `position` is the 0-based offset it names, if any. */
export class ConditionError extends Error {
  readonly position: number | null;
  constructor(message: string, position: number | null = null) {
    super(message);
    this.name = 'ConditionError';
    this.position = position;
  }
}

export type Token =
  | { kind: 'number'; value: number; text: string; pos: number }
  | { kind: 'string'; value: string; text: string; pos: number }
  | { kind: 'ident'; value: string; text: string; pos: number }
  | { kind: 'op'; value: Operator; text: string; pos: number }
  | { kind: 'eof'; value: null; text: ''; pos: number };

export type Operator = '==' | '!=' | '<=' | '>=' | '<' | '>' | '&&' | '||' | '!' | '(' | ')' | '[' | ']' | '.' | ',' | '-';

/** Longest first, so `<=` wins over `<`. */
const OPERATORS: readonly Operator[] = ['==', '!=', '<=', '>=', '&&', '||', '<', '>', '!', '(', ')', '[', ']', '.', ',', '-'];

/** Characters that look like an operator but are not one, with the hint to give. */
const NEAR_MISSES: Record<string, string> = {
  '=': 'use == to compare',
  '&': 'use && for "and"',
  '|': 'use || for "or"',
  $: 'a ${{ … }} wrapper must enclose the whole condition',
};

const ESCAPES: Record<string, string> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  n: '\n',
  r: '\r',
  t: '\t',
  '0': '\0',
  b: '\b',
  f: '\f',
  v: '\v',
};

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const isIdentStart = (c: string | undefined): boolean => c !== undefined && /[A-Za-z_]/.test(c);
/** Identifiers may contain hyphens after the first character (`steps.run-tests.status`): there is no subtraction. */
const isIdentPart = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9_-]/.test(c);

/** How a character is shown in a message: quoted, with control characters spelled out. */
export function showChar(c: string): string {
  return /[\x00-\x1f\x7f]/.test(c) ? JSON.stringify(c) : `'${c}'`;
}

/** Splits `text[start, end)` into tokens, ending with an `eof` token at `end`. */
export function tokenize(text: string, start = 0, end = text.length): Token[] {
  const tokens: Token[] = [];
  let i = start;
  while (i < end) {
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const pos = i;
    if (isDigit(c)) {
      i = readNumber(text, i, end, tokens);
      continue;
    }
    if (c === "'" || c === '"') {
      i = readString(text, i, end, tokens);
      continue;
    }
    if (isIdentStart(c)) {
      while (i < end && isIdentPart(text[i])) i++;
      const word = text.slice(pos, i);
      tokens.push({ kind: 'ident', value: word, text: word, pos });
      continue;
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i) && i + o.length <= end);
    if (op) {
      tokens.push({ kind: 'op', value: op, text: op, pos });
      i += op.length;
      continue;
    }
    const hint = NEAR_MISSES[c];
    throw new ConditionError(`unexpected ${showChar(c)} at ${pos}${hint ? ` (${hint})` : ''}`, pos);
  }
  tokens.push({ kind: 'eof', value: null, text: '', pos: end });
  return tokens;
}

/** Digits, an optional fraction and an optional exponent: `3`, `2.5`, `1e3`, `1.5E-2`. */
function readNumber(text: string, i: number, end: number, tokens: Token[]): number {
  const pos = i;
  while (i < end && isDigit(text[i])) i++;
  if (text[i] === '.' && i + 1 < end && isDigit(text[i + 1])) {
    i++;
    while (i < end && isDigit(text[i])) i++;
  }
  if ((text[i] === 'e' || text[i] === 'E') && i + 1 < end) {
    let j = i + 1;
    if ((text[j] === '+' || text[j] === '-') && j + 1 < end) j++;
    if (isDigit(text[j])) {
      i = j;
      while (i < end && isDigit(text[i])) i++;
    }
  }
  if (i < end && (isIdentPart(text[i]) || text[i] === '.')) {
    let j = i + 1;
    while (j < end && (isIdentPart(text[j]) || text[j] === '.')) j++;
    throw new ConditionError(`invalid number '${text.slice(pos, j)}' at ${pos}`, pos);
  }
  const raw = text.slice(pos, i);
  tokens.push({ kind: 'number', value: Number(raw), text: raw, pos });
  return i;
}

/** A 'single' or "double" quoted string with backslash escapes (\n \t \r \0 \b \f \v \\ \' \" \xHH \uHHHH \u{H…}). */
function readString(text: string, i: number, end: number, tokens: Token[]): number {
  const pos = i;
  const quote = text[i++];
  let value = '';
  while (i < end && text[i] !== quote) {
    const c = text[i];
    if (c !== '\\') {
      value += c;
      i++;
      continue;
    }
    const escPos = i;
    const e = text[i + 1];
    if (i + 1 >= end) break;
    if (Object.hasOwn(ESCAPES, e)) {
      value += ESCAPES[e];
      i += 2;
      continue;
    }
    let hex: string | undefined;
    let next = i;
    if (e === 'x') {
      hex = text.slice(i + 2, Math.min(i + 4, end));
      next = i + 4;
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) hex = undefined;
    } else if (e === 'u' && text[i + 2] === '{') {
      const close = text.indexOf('}', i + 3);
      if (close !== -1 && close < end) {
        hex = text.slice(i + 3, close);
        next = close + 1;
        if (!/^[0-9A-Fa-f]{1,6}$/.test(hex) || parseInt(hex, 16) > 0x10ffff) hex = undefined;
      }
    } else if (e === 'u') {
      hex = text.slice(i + 2, Math.min(i + 6, end));
      next = i + 6;
      if (!/^[0-9A-Fa-f]{4}$/.test(hex)) hex = undefined;
    }
    if (hex === undefined) {
      const shown = e === 'x' || e === 'u' ? text.slice(i, Math.min(next, end)) : `\\${e}`;
      throw new ConditionError(`invalid escape '${shown}' at ${escPos}`, escPos);
    }
    value += String.fromCodePoint(parseInt(hex, 16));
    i = next;
  }
  if (i >= end) throw new ConditionError(`unterminated string starting at ${pos}`, pos);
  i++; // closing quote
  tokens.push({ kind: 'string', value, text: text.slice(pos, i), pos });
  return i;
}
