import { parseArgs } from 'node:util';
import { UsageError } from './errors.ts';
import { closest } from '../core/closest.ts';

/** Flags accepted anywhere on the command line, before or after the command words. */
export interface GlobalFlags {
  apiUrl?: string;
  profile?: string;
  org?: string;
  project?: string;
  json: boolean;
  help: boolean;
  version?: boolean;
}

export interface SplitArgs {
  globals: GlobalFlags;
  /** Command words and command-specific flags, global flags removed. */
  rest: string[];
  /** Set when the command is `serve`: everything after it, untouched, for the server's own parser. */
  serveArgs?: string[];
}

const VALUE_FLAGS = { '--api-url': 'apiUrl', '--profile': 'profile', '--org': 'org', '--project': 'project' } as const;
type ValueFlag = keyof typeof VALUE_FLAGS;
const isValueFlag = (name: string): name is ValueFlag => Object.hasOwn(VALUE_FLAGS, name);

/** Pull the global flags out of argv; the rest is left in order for the command's own parser. */
export function splitGlobals(argv: string[]): SplitArgs {
  const globals: GlobalFlags = { json: false, help: false };
  const rest: string[] = [];
  let sawWord = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (!arg.startsWith('-')) {
      if (!sawWord && arg === 'serve') return { globals, rest, serveArgs: argv.slice(i + 1) };
      sawWord = true;
      rest.push(arg);
      continue;
    }
    if (arg === '--json') globals.json = true;
    else if (arg === '-h' || arg === '--help') globals.help = true;
    else if (!sawWord && (arg === '-V' || arg === '--version')) globals.version = true;
    else {
      const eq = arg.indexOf('=');
      const name = eq === -1 ? arg : arg.slice(0, eq);
      if (!isValueFlag(name)) {
        rest.push(arg);
        continue;
      }
      const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined || value === '' || (eq === -1 && value.startsWith('--'))) {
        throw new UsageError(`option ${name} needs a value`);
      }
      globals[VALUE_FLAGS[name]] = value;
    }
  }
  return { globals, rest };
}

type OptionSpec = Record<string, { type: 'string' | 'boolean'; short?: string }>;
type Values<O extends OptionSpec> = { [K in keyof O]?: O[K]['type'] extends 'string' ? string : boolean };

/** Parse one command's own flags strictly; any mistake becomes a UsageError carrying `usage`. */
export function parseCommand<O extends OptionSpec>(
  args: string[],
  options: O,
  usage: string,
  positionals: { min: number; max: number },
): { values: Values<O>; positionals: string[] } {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/\. To specify a positional.*$/s, '') : String(error);
    const unknown = /^Unknown option '(--[^']+)'/.exec(message);
    const near =
      unknown &&
      closest(
        unknown[1],
        Object.keys(options).map((name) => `--${name}`),
      );
    throw new UsageError(near ? `${message}; did you mean ${near}?` : message, usage);
  }
  const count = parsed.positionals.length;
  if (count < positionals.min) throw new UsageError('missing argument', usage);
  if (count > positionals.max) throw new UsageError(`unexpected argument "${parsed.positionals[positionals.max]}"`, usage);
  return { values: parsed.values as Values<O>, positionals: parsed.positionals };
}

/** A non-negative integer flag value, e.g. `--limit 20`. */
export function intFlag(value: string | undefined, name: string, usage: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer, got "${value}"`, usage);
  return Number(value);
}

/** Require a flag; the message names it so the user knows what to add. */
export function requireFlag(value: string | undefined, name: string, usage: string): string {
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`, usage);
  return value;
}

/** A flag holding a JSON object (`--inputs '{"a":1}'`); `what` names it in the error. */
export function jsonObjectFlag(value: string | undefined, what: string, usage: string): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new UsageError(`${what} must be JSON: ${(error as Error).message}`, usage);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError(`${what} must be a JSON object`, usage);
  return parsed as Record<string, unknown>;
}
