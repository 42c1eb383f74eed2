/**
 * How deeply a JSON or YAML text nests, found by one linear pass over the characters, before any
 * parser sees the text: parsers take time (and stack) that grows with the nesting, so a small
 * document nested thousands deep can hold the event loop for seconds. These scans keep no more
 * than a few numbers (and, for YAML, one indentation column per open level), so they stay cheap on
 * anything a request can carry. Settings and their defaults: core/parse-limits.ts.
 */

/** Where a text first nests deeper than the limit: 1-based line and column, and the 0-based offset. */
export interface TooDeep {
  line: number;
  column: number;
  offset: number;
}

/**
 * JSON nesting, fed in chunks as they arrive (a request body): `[` and `{` outside strings open a
 * level, `]` and `}` close one. Bytes are enough: every character that matters is ASCII, and the
 * bytes of a multi-byte character are all ≥ 0x80. It also keeps where it is (the key or index at
 * each open level, up to the limit), so a refusal can name the field as the checks after parsing do.
 */
export class JsonNesting {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private seen = 0;
  /** Per open level up to the limit: an array's index, or an object's last key. */
  private readonly at: (string | number)[] = [];
  private readonly inArray: boolean[] = [];
  /** The next string at this level is an object's key. */
  private expectKey = false;
  /** The key being read, as raw JSON string bytes (at most KEY_BYTES kept); null when the string is not a key. */
  private key: number[] | null = null;
  /** The byte offset of the first opening beyond the limit, once there is one. */
  tooDeepAt: number | null = null;
  /** The dotted path of the value nested beyond the limit (`hints.a.a`, `items[3]`), once there is one. */
  tooDeepPath: string | null = null;

  constructor(private readonly limit: number) {}

  /** Scans one chunk; the index in it of the first opening beyond the limit, or -1. */
  feed(chunk: Uint8Array): number {
    if (this.tooDeepAt !== null) return -1;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c /* \ */) this.escaped = true;
        else if (c === 0x22 /* " */) {
          this.inString = false;
          if (this.key) this.endKey();
          continue;
        }
        if (this.key && this.key.length < KEY_BYTES) this.key.push(c);
      } else if (c === 0x22) {
        this.inString = true;
        this.key = this.expectKey ? [] : null;
      } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
        if (++this.depth > this.limit) {
          this.tooDeepAt = this.seen + i;
          this.tooDeepPath = pathOf(this.at);
          return i;
        }
        this.inArray[this.depth - 1] = c === 0x5b;
        this.at[this.depth - 1] = c === 0x5b ? 0 : '';
        this.expectKey = c === 0x7b;
      } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
        if (this.depth > 0) this.depth--;
        this.expectKey = false;
      } else if (c === 0x2c /* , */ && this.depth > 0) {
        if (this.inArray[this.depth - 1]) (this.at[this.depth - 1] as number)++;
        else this.expectKey = true;
      }
    }
    this.seen += chunk.length;
    return -1;
  }

  private endKey(): void {
    const raw = Buffer.from(this.key!).toString('utf8');
    let key = raw;
    try {
      key = JSON.parse(`"${raw}"`) as string;
    } catch {
      // cut inside an escape: the raw text names it well enough
    }
    this.at[this.depth - 1] = key;
    this.key = null;
    this.expectKey = false;
  }
}

/** How much of a key the path keeps. */
const KEY_BYTES = 256;

const pathOf = (at: (string | number)[]) => at.reduce<string>((path, key) => (typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key), '');

/** The whole of a JSON text at once; null when it nests no deeper than `limit`. */
export function jsonTooDeep(text: string, limit: number): number | null {
  const scan = new JsonNesting(limit);
  scan.feed(Buffer.from(text, 'utf8'));
  return scan.tooDeepAt;
}

const SP = 0x20;
const TAB = 0x09;
const CR = 0x0d;
const LF = 0x0a;
const HASH = 0x23;
const DQ = 0x22;
const SQ = 0x27;
const BACKSLASH = 0x5c;
const OPEN_SQ = 0x5b;
const CLOSE_SQ = 0x5d;
const OPEN_CB = 0x7b;
const CLOSE_CB = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;
const DASH = 0x2d;
const QUESTION = 0x3f;
const BANG = 0x21;
const AMP = 0x26;
const PIPE = 0x7c;
const GT = 0x3e;

/** Space, tab, line end, or past the end (charCodeAt gives NaN there). */
const isBlank = (c: number) => c === SP || c === TAB || c === CR || c === LF || Number.isNaN(c);

/**
 * YAML nesting: open block levels (indentation, and each `- `, `? ` or `: ` indicator that starts a
 * line's content) plus open flow levels (`[`, `{`). Quoted scalars, comments and block scalars
 * (`|`, `>`) are skipped as YAML skips them, so brackets, `#` and indentation inside them do not
 * count; a quote or bracket only opens something where a node starts (line start, after an
 * indicator, a `: ` or, in flow, after `[`, `{`, `,` or `:`), so `echo it's [x]` is plain text, and
 * a line more indented than a finished `key: value` continues that plain scalar.
 * Block levels are counted by indentation columns, which counts a level or so more than a parser
 * would for some layouts: a limit of 64 leaves real manifests (a dozen levels) far below it.
 * What this scan could misread is covered by mayNestBeyond.
 */
export function yamlTooDeep(text: string, limit: number): TooDeep | null {
  const blocks: number[] = [];
  let flow = 0;
  let quote = 0; // DQ, SQ or 0
  /** Lines indented more than this are the text of a block scalar (`run: |`). */
  let scalarAbove = -1;
  /** The last line ended where a value may still follow (after `key:`, `- `), not inside a plain scalar. */
  let open = true;
  let line = 0;
  const at = (i: number) => text.charCodeAt(i);
  for (let start = 0; start <= text.length;) {
    line++;
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    let indent = 0;
    while (at(start + indent) === SP) indent++;
    let p = start + indent;
    const first = at(p);
    const blank = p >= end || first === CR || (first === HASH && quote === 0 && flow === 0);
    const lineStart = start;
    const deeper = (i: number): TooDeep | null => (blocks.length + flow > limit ? { line, column: i - lineStart + 1, offset: i } : null);

    if (scalarAbove >= 0) {
      if (blank || indent > scalarAbove) {
        start = end + 1;
        continue;
      }
      scalarAbove = -1;
    }
    let nodeStart = true;
    if (quote === 0 && flow === 0 && !blank) {
      const top = blocks.length ? blocks[blocks.length - 1] : -1;
      if (indent > top && !open && blocks.length) {
        nodeStart = false; // more indented than a finished `key: value`: that plain scalar goes on
      } else {
        while (blocks.length && blocks[blocks.length - 1] > indent) blocks.pop();
        if (!blocks.length || blocks[blocks.length - 1] < indent) blocks.push(indent);
        if (indent === 0 && (text.startsWith('---', p) || text.startsWith('...', p)) && isBlank(at(p + 3))) {
          blocks.length = 0;
          p += 3;
        }
        for (let c = at(p); (c === DASH || c === QUESTION || c === COLON) && p < end && isBlank(at(p + 1)); c = at(p)) {
          p++;
          while (at(p) === SP || at(p) === TAB) p++;
          if (p < end && at(p) !== CR && at(p) !== HASH) blocks.push(p - start);
        }
        const found = deeper(p);
        if (found) return found;
      }
    }
    if (!blank && nodeStart) open = true;
    for (; p < end; p++) {
      const c = at(p);
      if (quote === SQ) {
        if (c === SQ) {
          if (at(p + 1) === SQ) p++;
          else quote = 0;
        }
        continue;
      }
      if (quote === DQ) {
        if (c === BACKSLASH) p++;
        else if (c === DQ) quote = 0;
        continue;
      }
      if (c === SP || c === TAB || c === CR) continue;
      if (c === HASH && (p === start || at(p - 1) === SP || at(p - 1) === TAB)) break;
      if (nodeStart) {
        if (c === DQ || c === SQ) {
          quote = c;
          nodeStart = false;
          open = false;
          continue;
        }
        if (c === OPEN_SQ || c === OPEN_CB) {
          flow++;
          const found = deeper(p);
          if (found) return found;
          continue;
        }
        if (c === BANG || c === AMP) {
          while (p + 1 < end && !isBlank(at(p + 1))) p++;
          continue;
        }
        if (flow === 0 && (c === PIPE || c === GT)) {
          scalarAbove = blocks.length ? blocks[blocks.length - 1] : 0;
          break;
        }
        nodeStart = false;
        open = false;
      }
      if (flow > 0) {
        if (c === OPEN_SQ || c === OPEN_CB) {
          flow++;
          nodeStart = true;
          const found = deeper(p);
          if (found) return found;
        } else if (c === CLOSE_SQ || c === CLOSE_CB) {
          flow--;
        } else if (c === COMMA || c === COLON || (c === QUESTION && isBlank(at(p + 1)))) {
          nodeStart = true;
        }
        continue;
      }
      if (c === COLON && isBlank(at(p + 1))) {
        nodeStart = true;
        open = true;
      }
    }
    if (quote !== 0 || flow > 0) open = true;
    start = end + 1;
  }
  return null;
}

/**
 * What a text could hide from a scan that reads it as YAML: how many `[` and `{` it has anywhere
 * (quoted or not) and its deepest indentation. A text with no more openings than the limit and no
 * indentation beyond two columns a level cannot nest deeper than the limit, whatever it means; any
 * other text may, if the scan misread a quote or a block scalar, so it is parsed off the event loop.
 */
export function mayNestBeyond(text: string, limit: number): boolean {
  let openings = 0;
  let indent = 0;
  let atLineStart = true;
  let column = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) openings++;
    if (c === 0x0a) {
      atLineStart = true;
      column = 0;
    } else if (atLineStart && c === 0x20) {
      column++;
      if (column > indent) indent = column;
    } else {
      atLineStart = false;
    }
  }
  return openings > limit || indent > 2 * limit;
}
