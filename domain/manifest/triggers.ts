import { cronProblem } from '../../core/cron.ts';
import { patternProblem } from '../../core/events/patterns.ts';
import { EVENT_SOURCES, type EventSource } from '../../core/events/emit.ts';
import { Problems, at, isObject, isString, kindOf } from './problems.ts';

export const PR_ACTIONS = ['opened', 'synchronize', 'reopened', 'closed'] as const;
export const CHAT_EVENTS = ['message', 'app_mention'] as const;
const VCS_EVENTS = ['push', 'pull_request'] as const;

/** One way a trigger fires; a trigger mapping may hold several (any of them fires it). */
export type TriggerClause =
  | { kind: 'push'; branches: string[] | null }
  | { kind: 'pull_request'; actions: string[] | null; base_branches: string[] | null }
  | { kind: 'cron'; schedule: string }
  | { kind: 'system'; event: string; pipelines: string[] | null }
  | { kind: 'chatapp'; event: string; channels: string[] | null }
  | { kind: 'custom'; type: string | null; source: EventSource | null }
  | { kind: 'manual' };

export const TRIGGER_KEYS = ['vcshost', 'event', 'branch', 'action', 'base_branch', 'chatapp', 'channel', 'cron', 'system', 'manual'] as const;

/** A pattern or a list of them; null when absent (matches anything). */
function patterns(problems: Problems, value: unknown, path: string): string[] | null {
  if (value === undefined) return null;
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0 || !list.every(isString)) {
    problems.add(path, `${path} must be a pattern or a list of patterns, got ${kindOf(value)}`);
    return null;
  }
  for (const p of list) {
    const problem = patternProblem(p);
    if (problem) problems.add(path, problem);
  }
  return list;
}

function oneOf<T extends string>(problems: Problems, value: unknown, allowed: readonly T[], path: string): value is T {
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return true;
  problems.add(path, `${path} must be one of ${allowed.join(', ')}, got ${typeof value === 'string' ? `'${value}'` : kindOf(value)}`);
  return false;
}

/** The vcshost clause, reading each field from the `vcshost` mapping, else from the trigger itself (`event: push, branch: main`). */
function vcshostClause(
  problems: Problems,
  trigger: Record<string, unknown>,
  fields: Record<string, unknown>,
  path: string,
  fieldsPath: string,
): TriggerClause | null {
  const field = (key: string) =>
    fields[key] !== undefined ? { value: fields[key], where: at(fieldsPath, key) } : { value: trigger[key], where: at(path, key) };
  if (!oneOf(problems, fields.event, VCS_EVENTS, at(fieldsPath, 'event'))) return null;
  if (fields.event === 'push') {
    for (const key of ['action', 'base_branch'])
      if (field(key).value !== undefined) problems.add(field(key).where, `${key} applies to pull_request triggers, not push`);
    return { kind: 'push', branches: patterns(problems, field('branch').value, field('branch').where) };
  }
  if (field('branch').value !== undefined) problems.add(field('branch').where, 'pull_request triggers take base_branch, not branch');
  const action = field('action');
  let actions: string[] | null = null;
  if (action.value !== undefined) {
    const list = Array.isArray(action.value) ? action.value : [action.value];
    if (list.length === 0) problems.add(action.where, `${action.where} must list at least one of ${PR_ACTIONS.join(', ')}`);
    list.forEach((a, i) => oneOf(problems, a, PR_ACTIONS, Array.isArray(action.value) ? `${action.where}[${i}]` : action.where));
    actions = list as string[];
  }
  return { kind: 'pull_request', actions, base_branches: patterns(problems, field('base_branch').value, field('base_branch').where) };
}

/** `event: {type, source}`: a custom event trigger. */
function customClause(problems: Problems, event: Record<string, unknown>, path: string): TriggerClause | null {
  for (const key of Object.keys(event))
    if (key !== 'type' && key !== 'source') problems.add(at(path, key), `Unknown key '${key}' in ${path}; expected type and source`);
  if (event.type === undefined && event.source === undefined) {
    problems.add(path, 'a custom event trigger needs event.type, event.source or both');
    return null;
  }
  let type: string | null = null;
  if (event.type !== undefined) {
    const problem = isString(event.type) ? patternProblem(event.type) : 'event.type must be an event type or pattern';
    if (problem) problems.add(at(path, 'type'), problem);
    else type = event.type as string;
  }
  let source: EventSource | null = null;
  if (event.source !== undefined && oneOf(problems, event.source, EVENT_SOURCES, at(path, 'source'))) source = event.source;
  return { kind: 'custom', type, source };
}

/**
 * The clauses of a `trigger` mapping (`pipelines.<name>.trigger` or `workflows.<name>.trigger`),
 * reporting every problem with its path. Forms, after the spec's table: `vcshost: {event: push,
 * branch}` or `event: push` with `branch`; `event: pull_request` with `action` and `base_branch`;
 * `cron: {schedule}` (or `cron: "<expr>"`); `system: {event, pipeline}`; `chatapp: {event,
 * channel}` or `event: message` with `channel`; `event: {type, source}` (custom); `manual: true`.
 */
export function readTrigger(trigger: unknown, path: string, problems = new Problems()): TriggerClause[] {
  if (!isObject(trigger)) {
    problems.add(path, `${path} must be a mapping, got ${kindOf(trigger)}`);
    return [];
  }
  const clauses: TriggerClause[] = [];
  for (const key of Object.keys(trigger)) {
    if (!(TRIGGER_KEYS as readonly string[]).includes(key)) {
      problems.add(at(path, key), `Unknown trigger kind '${key}' in ${path}; expected vcshost, event, cron, system, chatapp or manual`);
    }
  }
  const { event } = trigger;
  const flatVcs = typeof event === 'string' && (VCS_EVENTS as readonly string[]).includes(event);
  const flatChat = typeof event === 'string' && (CHAT_EVENTS as readonly string[]).includes(event);

  if (trigger.vcshost !== undefined) {
    if (flatVcs) problems.add(at(path, 'event'), 'give the vcshost event once: in vcshost.event or in event');
    if (isObject(trigger.vcshost)) {
      const clause = vcshostClause(problems, trigger, trigger.vcshost, path, at(path, 'vcshost'));
      if (clause) clauses.push(clause);
    } else problems.add(at(path, 'vcshost'), `${at(path, 'vcshost')} must be a mapping with event: push or pull_request, got ${kindOf(trigger.vcshost)}`);
  } else if (flatVcs) {
    const clause = vcshostClause(problems, trigger, { event }, path, path);
    if (clause) clauses.push(clause);
  } else {
    for (const key of ['branch', 'action', 'base_branch']) {
      if (trigger[key] !== undefined) problems.add(at(path, key), `${key} belongs to a vcshost trigger (event: push or pull_request)`);
    }
  }

  const chat = trigger.chatapp !== undefined ? trigger.chatapp : flatChat ? { event, channel: trigger.channel } : undefined;
  const chatPath = trigger.chatapp !== undefined ? at(path, 'chatapp') : path;
  if (chat !== undefined) {
    if (trigger.chatapp !== undefined && flatChat) problems.add(at(path, 'event'), 'give the chatapp event once: in chatapp.event or in event');
    if (!isObject(chat)) problems.add(chatPath, `${chatPath} must be a mapping with event and channel, got ${kindOf(chat)}`);
    else if (oneOf(problems, chat.event, CHAT_EVENTS, at(chatPath, 'event'))) {
      clauses.push({ kind: 'chatapp', event: chat.event, channels: patterns(problems, chat.channel, at(chatPath, 'channel')) });
    }
  }
  if (trigger.channel !== undefined && !flatChat) problems.add(at(path, 'channel'), 'channel belongs to a chatapp trigger (event: message or app_mention)');

  if (event !== undefined && !flatVcs && !flatChat) {
    if (isObject(event)) {
      const clause = customClause(problems, event, at(path, 'event'));
      if (clause) clauses.push(clause);
    } else {
      problems.add(
        at(path, 'event'),
        `event must be push, pull_request, message, app_mention, or a mapping {type, source}; got ${typeof event === 'string' ? `'${event}'` : kindOf(event)}`,
      );
    }
  }

  if (trigger.cron !== undefined) {
    const where = at(path, 'cron');
    const schedule = isObject(trigger.cron) ? trigger.cron.schedule : trigger.cron;
    const schedulePath = isObject(trigger.cron) ? at(where, 'schedule') : where;
    if (!isString(schedule)) problems.add(schedulePath, `${schedulePath} must be a cron expression, got ${kindOf(schedule)}`);
    else {
      const problem = cronProblem(schedule);
      if (problem) problems.add(schedulePath, problem);
      else clauses.push({ kind: 'cron', schedule: schedule.trim() });
    }
  }

  if (trigger.system !== undefined) {
    const where = at(path, 'system');
    if (!isObject(trigger.system) || !isString(trigger.system.event)) {
      problems.add(at(where, 'event'), `${at(where, 'event')} must name a system event, for example job.failed`);
    } else {
      const name = trigger.system.event.replace(/^system\./, '');
      const problem = patternProblem(name);
      if (problem) problems.add(at(where, 'event'), problem);
      else clauses.push({ kind: 'system', event: name, pipelines: patterns(problems, trigger.system.pipeline, at(where, 'pipeline')) });
    }
  }

  if (trigger.manual !== undefined) {
    if (typeof trigger.manual !== 'boolean') problems.add(at(path, 'manual'), 'manual must be true or false');
    else if (trigger.manual) clauses.push({ kind: 'manual' });
  }
  return clauses;
}

/** The trigger's problems only (manifest validation). */
export function checkTrigger(problems: Problems, trigger: unknown, path: string): void {
  readTrigger(trigger, path, problems);
}
