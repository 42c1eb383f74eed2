import { ACTION_TYPES } from './types.ts';
import { type Problems, at, expectObject, index, isObject, isString, isStringList, kindOf, unknownKeys } from './problems.ts';

export type StepOwner = { kind: 'workflow' | 'pipeline'; name: string };

const KINDS = ['action', 'script', 'agent', 'run'] as const;
export const EXACTLY_ONE_KIND = 'Workflow step must define exactly one of action, script, agent, or run';

/** Checks one step's execution kind; the owner decides what an agent looks like. */
export function checkStepKind(problems: Problems, step: Record<string, unknown>, path: string, owner: StepOwner): void {
  const kinds = KINDS.filter((k) => step[k] !== undefined);
  if (kinds.length !== 1) {
    problems.add(path, EXACTLY_ONE_KIND);
    return;
  }
  const kind = kinds[0];
  const value = step[kind];
  const where = at(path, kind);
  if (kind === 'run') {
    if (!isString(value)) problems.add(where, `run must be a non-empty command string, got ${kindOf(value)}`);
  } else if (kind === 'script') {
    if (!expectObject(problems, value, where)) return;
    unknownKeys(problems, value, ['run', 'command', 'timeout'], where);
    const command = value.run ?? value.command;
    if (!isString(command) || (value.run !== undefined && value.command !== undefined)) {
      problems.add(where, 'script must have a non-empty run (or command) string');
    }
    if (value.timeout !== undefined && !(typeof value.timeout === 'number' && value.timeout > 0)) {
      problems.add(at(where, 'timeout'), 'script.timeout must be a positive number of seconds');
    }
  } else if (kind === 'action') {
    if (!expectObject(problems, value, where)) return;
    unknownKeys(problems, value, ['type', 'with'], where);
    if (!isString(value.type)) problems.add(at(where, 'type'), 'action.type is required');
    else if (!(ACTION_TYPES as readonly string[]).includes(value.type)) {
      problems.add(at(where, 'type'), `Unknown action type '${value.type}'; expected one of ${ACTION_TYPES.join(', ')}`);
    }
    if (value.with !== undefined) expectObject(problems, value.with, at(where, 'with'));
  } else if (owner.kind === 'pipeline') {
    if (!expectObject(problems, value, where)) return;
    unknownKeys(problems, value, ['prompt'], where);
    if (!isString(value.prompt)) problems.add(at(where, 'prompt'), 'agent.prompt is required');
  } else {
    if (!expectObject(problems, value, where)) return;
    unknownKeys(problems, value, ['name', 'harness', 'harness_profile', 'toolchains'], where);
    if (!isString(value.name)) problems.add(at(where, 'name'), 'agent.name is required');
    for (const key of ['harness', 'harness_profile'] as const) {
      if (value[key] !== undefined && !isString(value[key])) problems.add(at(where, key), `agent.${key} must be a string`);
    }
    if (value.toolchains !== undefined && !isStringList(value.toolchains)) problems.add(at(where, 'toolchains'), 'agent.toolchains must be a list of strings');
  }
}

/**
 * Names, duplicates, dependencies and cycles across a list of steps. Returns the steps that are
 * mappings (with their index), for per-step checks by the caller.
 */
export function checkStepGraph(problems: Problems, steps: unknown[], path: string, owner: StepOwner): void {
  const names = new Map<string, number>();
  const edges = new Map<string, string[]>();
  steps.forEach((step, i) => {
    if (!isObject(step) || !isString(step.name)) return;
    if (names.has(step.name)) {
      problems.add(at(index(path, i), 'name'), `Duplicate step name '${step.name}' in ${owner.kind} '${owner.name}'`);
    } else {
      names.set(step.name, i);
    }
  });
  steps.forEach((step, i) => {
    if (!isObject(step) || step.depends_on === undefined) return;
    const where = at(index(path, i), 'depends_on');
    if (!Array.isArray(step.depends_on)) {
      problems.add(where, `depends_on must be a list of step names, got ${kindOf(step.depends_on)}`);
      return;
    }
    const name = isString(step.name) ? step.name : `#${i}`;
    step.depends_on.forEach((ref, j) => {
      if (!isString(ref)) problems.add(index(where, j), 'depends_on entries must be step names');
      else if (!names.has(ref)) problems.add(index(where, j), `Step '${name}' depends on unknown step '${ref}' in ${owner.kind} '${owner.name}'`);
      else if (isString(step.name) && names.get(step.name) === i) edges.set(step.name, [...(edges.get(step.name) ?? []), ref]);
    });
  });
  for (const cycle of findCycles(edges)) {
    problems.add(at(index(path, names.get(cycle[0])!), 'depends_on'), `Cycle detected in ${owner.kind} '${owner.name}': ${[...cycle, cycle[0]].join(' -> ')}`);
  }
}

/**
 * Every elementary cycle reachable by depth-first search, each reported once, starting at its
 * first node in declaration order (edges point from a step to what it depends on).
 */
export function findCycles(edges: Map<string, string[]>): string[][] {
  const order = [...edges.keys()];
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const seen = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string) => {
    state.set(node, 'visiting');
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (state.get(next) === 'visiting') {
        const cycle = stack.slice(stack.indexOf(next));
        const first = cycle.reduce((a, b) => (order.indexOf(a) <= order.indexOf(b) ? a : b));
        const rotated = [...cycle.slice(cycle.indexOf(first)), ...cycle.slice(0, cycle.indexOf(first))];
        const key = rotated.join('\0');
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push(rotated);
        }
      } else if (!state.has(next)) {
        visit(next);
      }
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of order) if (!state.has(node)) visit(node);
  return cycles;
}
