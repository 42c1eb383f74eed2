import { closest } from '../../core/closest.ts';
import { type Problems, at, expectObject, isObject, kindOf, unknownKeys } from './problems.ts';

/**
 * A pipeline's declared inputs (manifest `pipelines.<name>.inputs`, docs/pipelines.md "Declared
 * inputs"): what a run may be given, which it must be given, and what fills one not given.
 */
export interface PipelineInputDeclaration {
  /** A run without it (and without a default for it) is refused. */
  required?: boolean;
  /** Fills the input when the run is not given it. A string: YAML would read `1.10` as the number 1.1. */
  default?: string;
  description?: string;
}
export type PipelineInputDeclarations = Record<string, PipelineInputDeclaration>;

const DECLARATION_KEYS = ['required', 'default', 'description'] as const;

/** An input name: what `${inputs.<name>}` reads as one key (a dot would make it a path). */
export const INPUT_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** `SVC_INPUT_<PATH>`: the input's path upper-cased, anything but letters and digits (the dots too) as `_`. */
export const inputVariable = (path: string): string => `SVC_INPUT_${path.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;

/**
 * Checks `pipelines.<name>.inputs`: a mapping of input names to `{required, default, description}`,
 * names that are one key each and never share a step's variable.
 */
export function checkPipelineInputs(problems: Problems, value: unknown, path: string): void {
  if (value === undefined || !expectObject(problems, value, path)) return;
  const variables = new Map<string, string>();
  for (const [name, declaration] of Object.entries(value)) {
    const where = at(path, name);
    if (!INPUT_NAME.test(name)) {
      problems.add(where, `input name '${name}' must start with a letter or _ and hold only letters, digits, _ and -`);
    } else {
      const variable = inputVariable(name);
      const other = variables.get(variable);
      if (other !== undefined) problems.add(where, `inputs '${other}' and '${name}' would both be ${variable} in a step: rename one`);
      else variables.set(variable, name);
    }
    if (!isObject(declaration)) {
      problems.add(
        where,
        `input '${name}' must be a mapping of required, default and description (write {} for an optional input), got ${kindOf(declaration)}`,
      );
      continue;
    }
    unknownKeys(problems, declaration, DECLARATION_KEYS, where);
    if (declaration.required !== undefined && typeof declaration.required !== 'boolean') problems.add(at(where, 'required'), 'required must be true or false');
    if (declaration.default !== undefined && typeof declaration.default !== 'string') {
      const quote = typeof declaration.default === 'number' || typeof declaration.default === 'boolean' ? ': quote it, so YAML keeps it as written' : '';
      problems.add(at(where, 'default'), `default must be a string, got ${kindOf(declaration.default)}${quote}`);
    }
    if (declaration.description !== undefined && typeof declaration.description !== 'string')
      problems.add(at(where, 'description'), `description must be a string, got ${kindOf(declaration.description)}`);
  }
}

/** The declared inputs' defaults, beneath which a run's inputs go. */
export function inputDefaults(declared: PipelineInputDeclarations): Record<string, string> {
  return Object.fromEntries(Object.entries(declared).flatMap(([name, d]) => (d.default === undefined ? [] : [[name, d.default]])));
}

/** An input a run lacks: absent, null or the empty string (what `v${inputs.version}` would make `v` of). */
const lacks = (inputs: Record<string, unknown>, name: string): boolean =>
  !Object.hasOwn(inputs, name) || inputs[name] === null || inputs[name] === undefined || inputs[name] === '';

/** The required inputs the run's inputs (defaults filled) lack. */
export function missingInputs(declared: PipelineInputDeclarations, inputs: Record<string, unknown>): string[] {
  return Object.entries(declared)
    .filter(([name, d]) => d.required === true && lacks(inputs, name))
    .map(([name]) => name);
}

/** The given inputs the pipeline does not declare. */
export function undeclaredInputs(declared: PipelineInputDeclarations, given: Record<string, unknown>): string[] {
  return Object.keys(given).filter((name) => !Object.hasOwn(declared, name));
}

/** `verison (did you mean version?)`: an undeclared name, with the declared one it is likely a typo of. */
export function describeUndeclared(declared: PipelineInputDeclarations, name: string): string {
  const near = closest(name, Object.keys(declared));
  return near ? `${name} (did you mean ${near}?)` : name;
}

/** `it declares channel, version` (by name: the stored form keeps no order), or `it declares none`. */
export function declaredNames(declared: PipelineInputDeclarations): string {
  const names = Object.keys(declared).sort();
  return names.length > 0 ? `it declares ${names.join(', ')}` : 'it declares none';
}

/** `version ("the tag to release")`: a declared input with its description, for messages that ask for it. */
export function describeInput(declared: PipelineInputDeclarations, name: string): string {
  const description = declared[name]?.description;
  return description ? `${name} ("${description}")` : name;
}
