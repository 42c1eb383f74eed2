/**
 * Recursive-descent parser for workflow step `if` conditions (see conditions.ts for the language).
 * Pure: builds a plain syntax tree, evaluates nothing.
 *
 * Precedence, loosest first: `||`, `&&`, `==` `!=`, `<` `<=` `>` `>=`, `!`, then literals, paths,
 * function calls and parentheses. `&&` and `||` group any number of operands into one node; the
 * comparison operators do not chain (`a == b == c` is an error: write the parentheses).
 */
import { ConditionError, showChar, tokenize, type Operator, type Token } from './conditions-lexer.ts';

export type Root = 'inputs' | 'event' | 'steps';
export const ROOTS: readonly Root[] = ['inputs', 'event', 'steps'];

export type FunctionName = 'contains' | 'startsWith' | 'endsWith' | 'exists' | 'len';
/** Each function and how many arguments it takes. */
export const FUNCTIONS: Readonly<Record<FunctionName, number>> = { contains: 2, startsWith: 2, endsWith: 2, exists: 1, len: 1 };

export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';

export type Segment = { kind: 'key'; key: string } | { kind: 'index'; expr: Node };

export type Node =
  | { type: 'literal'; value: null | boolean | number | string; pos: number }
  | { type: 'path'; root: Root; segments: Segment[]; pos: number }
  | { type: 'not'; operand: Node; pos: number }
  | { type: 'and' | 'or'; operands: Node[]; pos: number }
  | { type: 'compare'; op: CompareOp; left: Node; right: Node; pos: number }
  | { type: 'call'; fn: FunctionName; args: Node[]; pos: number };

export interface ParseLimits {
  /** Deepest nesting of parentheses, brackets, calls and `!`. */
  maxDepth: number;
}

const EQUALITY: readonly Operator[] = ['==', '!='];
const RELATIONAL: readonly Operator[] = ['<', '<=', '>', '>='];

/** How a token is named in a message. */
function describe(t: Token): string {
  if (t.kind === 'eof') return 'end of condition';
  if (t.kind === 'string') return `string ${t.text}`;
  return t.text.length === 1 ? showChar(t.text) : `'${t.text}'`;
}

/** Parses `text[start, end)` into a syntax tree; throws ConditionError naming the position. */
export function parseTokens(text: string, start: number, end: number, limits: ParseLimits): Node {
  return new Parser(tokenize(text, start, end), limits).parseAll();
}

class Parser {
  private i = 0;
  private depth = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly limits: ParseLimits,
  ) {}

  parseAll(): Node {
    if (this.peek().kind === 'eof') throw new ConditionError(`empty condition at ${this.peek().pos}`, this.peek().pos);
    const node = this.parseOr();
    const rest = this.peek();
    if (rest.kind !== 'eof') throw this.unexpected(rest);
    return node;
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.i + offset, this.tokens.length - 1)];
  }

  private next(): Token {
    const t = this.peek();
    if (t.kind !== 'eof') this.i++;
    return t;
  }

  private isOp(op: Operator, offset = 0): boolean {
    const t = this.peek(offset);
    return t.kind === 'op' && t.value === op;
  }

  private expectOp(op: Operator, context: string): Token {
    const t = this.peek();
    if (t.kind === 'op' && t.value === op) return this.next();
    throw this.unexpected(t, `expected '${op}' ${context}`);
  }

  private unexpected(t: Token, hint?: string): ConditionError {
    return new ConditionError(`unexpected ${describe(t)} at ${t.pos}${hint ? ` (${hint})` : ''}`, t.pos);
  }

  /** Runs `parse` one nesting level deeper; `at` is the token that opens the level. */
  private nested<T>(at: Token, parse: () => T): T {
    if (this.depth >= this.limits.maxDepth) {
      throw new ConditionError(`condition is nested too deeply at ${at.pos} (limit ${this.limits.maxDepth} levels)`, at.pos);
    }
    this.depth++;
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private parseOr(): Node {
    return this.parseChain('||', 'or', () => this.parseAnd());
  }

  private parseAnd(): Node {
    return this.parseChain('&&', 'and', () => this.parseEquality());
  }

  private parseChain(op: Operator, type: 'and' | 'or', operand: () => Node): Node {
    const first = operand();
    if (!this.isOp(op)) return first;
    const operands = [first];
    while (this.isOp(op)) {
      this.next();
      operands.push(operand());
    }
    return { type, operands, pos: first.pos };
  }

  private parseEquality(): Node {
    return this.parseComparison(EQUALITY, () => this.parseRelational());
  }

  private parseRelational(): Node {
    return this.parseComparison(RELATIONAL, () => this.parseUnary());
  }

  private parseComparison(ops: readonly Operator[], operand: () => Node): Node {
    const left = operand();
    const t = this.peek();
    if (t.kind !== 'op' || !ops.includes(t.value)) return left;
    this.next();
    const right = operand();
    const again = this.peek();
    if (again.kind === 'op' && ops.includes(again.value)) {
      throw this.unexpected(again, 'comparisons do not chain; add parentheses');
    }
    return { type: 'compare', op: t.value as CompareOp, left, right, pos: t.pos };
  }

  private parseUnary(): Node {
    const t = this.peek();
    if (t.kind === 'op' && t.value === '!') {
      this.next();
      return this.nested(t, () => ({ type: 'not', operand: this.parseUnary(), pos: t.pos }));
    }
    return this.parsePrimary();
  }

  private parsePrimary(): Node {
    const t = this.next();
    switch (t.kind) {
      case 'number':
      case 'string':
        return { type: 'literal', value: t.value, pos: t.pos };
      case 'ident':
        return this.parseName(t);
      case 'op':
        if (t.value === '(') {
          return this.nested(t, () => {
            const inner = this.parseOr();
            this.expectOp(')', `to close '(' at ${t.pos}`);
            return inner;
          });
        }
        if (t.value === '-') {
          const n = this.peek();
          if (n.kind === 'number' && n.pos === t.pos + 1) {
            this.next();
            return { type: 'literal', value: -n.value, pos: t.pos };
          }
        }
        throw this.unexpected(t);
      case 'eof':
        throw this.unexpected(t);
    }
  }

  /** A keyword literal, a function call or a path. */
  private parseName(t: Token & { kind: 'ident' }): Node {
    const word = t.value;
    if (word === 'true' || word === 'false') return { type: 'literal', value: word === 'true', pos: t.pos };
    if (word === 'null') return { type: 'literal', value: null, pos: t.pos };
    if (this.isOp('(')) {
      if (!Object.hasOwn(FUNCTIONS, word)) {
        throw new ConditionError(`unknown function '${word}' at ${t.pos} (functions: ${Object.keys(FUNCTIONS).join(', ')})`, t.pos);
      }
      return this.parseCall(t, word as FunctionName);
    }
    if (!(ROOTS as readonly string[]).includes(word)) {
      const hint = Object.hasOwn(FUNCTIONS, word) ? `${word} is a function: write ${word}(…)` : `paths start with ${ROOTS.join(', ')}; quote strings`;
      throw new ConditionError(`unknown name '${word}' at ${t.pos} (${hint})`, t.pos);
    }
    return this.parsePath(t, word as Root);
  }

  private parseCall(name: Token, fn: FunctionName): Node {
    const open = this.next(); // '('
    return this.nested(open, () => {
      const args: Node[] = [];
      if (!this.isOp(')')) {
        for (;;) {
          args.push(this.parseOr());
          if (!this.isOp(',')) break;
          this.next();
        }
      }
      this.expectOp(')', `to close ${fn}(`);
      const want = FUNCTIONS[fn];
      if (args.length !== want) {
        throw new ConditionError(`${fn}() takes ${want} argument${want === 1 ? '' : 's'} but got ${args.length} at ${name.pos}`, name.pos);
      }
      if (fn === 'exists' && args[0].type !== 'path') {
        throw new ConditionError(`exists() takes a path such as inputs.name at ${args[0].pos}`, args[0].pos);
      }
      return { type: 'call', fn, args, pos: name.pos };
    });
  }

  /** `root` followed by any number of `.name` and `[expression]` steps. */
  private parsePath(t: Token, root: Root): Node {
    const segments: Segment[] = [];
    for (;;) {
      if (this.isOp('.')) {
        this.next();
        const key = this.next();
        if (key.kind !== 'ident') throw this.unexpected(key, `expected a name after '.'; use [${key.kind === 'number' ? key.text : '…'}] for an index`);
        segments.push({ kind: 'key', key: key.value });
      } else if (this.isOp('[')) {
        const open = this.next();
        const expr = this.nested(open, () => {
          if (this.isOp(']')) throw this.unexpected(this.peek(), 'expected an index or key');
          const inner = this.parseOr();
          this.expectOp(']', `to close '[' at ${open.pos}`);
          return inner;
        });
        segments.push({ kind: 'index', expr });
      } else {
        return { type: 'path', root, segments, pos: t.pos };
      }
    }
  }
}
