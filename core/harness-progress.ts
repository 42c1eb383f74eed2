import type { HarnessEvent } from './ports/harness.ts';
import { isObject } from './is-object.ts';

/** One item of the plan an agent keeps (a todo list), as its CLI reports it. */
export interface PlanItem {
  text: string;
  done: boolean;
  /** The item it is working on now. */
  active?: boolean;
}

/**
 * A progress event from an agent's plan: the item in progress (else the next one not done) as the
 * message, and the share of items done as the percentage. Nothing for an empty plan.
 */
export function planProgress(items: PlanItem[]): HarnessEvent[] {
  if (items.length === 0) return [];
  const done = items.filter((i) => i.done).length;
  const current = items.find((i) => i.active && !i.done) ?? items.find((i) => !i.done);
  const message = current ? current.text : `all ${items.length} planned steps done`;
  return [{ type: 'progress', message, percentage: Math.round((done / items.length) * 100) }];
}

/**
 * The todo lists the CLIs keep, all shaped `{todos: [{<text key>, status}]}` with status pending,
 * in_progress or completed (cancelled items count as settled); `textKeys` names where the text is.
 */
export function todoItems(input: unknown, textKeys: string[]): PlanItem[] {
  const todos = isObject(input) && Array.isArray(input.todos) ? input.todos : [];
  return todos.filter(isObject).map((todo) => {
    const key = textKeys.find((k) => typeof todo[k] === 'string' && todo[k]);
    const status = String(todo.status ?? '');
    return { text: key ? String(todo[key]) : 'untitled step', done: status === 'completed' || status === 'cancelled', active: status === 'in_progress' };
  });
}
