import { matchesPattern } from '../../core/events/patterns.ts';

export interface WebhookFilter {
  project_id?: string;
  /** Pattern (core/events/patterns.ts) over the event payload's agent (`agent`, else `agent_slug`, else `assignee`). */
  agent?: string;
}

export interface Matchable {
  project_id: string | null;
  events: string[];
  filter: WebhookFilter;
}

export interface MatchableEvent {
  project_id: string;
  type: string;
  payload: Record<string, unknown>;
}

const SYSTEM = 'system.';

/** A pattern matches the type, and a `system.` type also without that prefix (`job.failed` ~ `system.job.failed`). */
export function typeMatches(patterns: string[], type: string): boolean {
  const short = type.startsWith(SYSTEM) ? type.slice(SYSTEM.length) : null;
  return patterns.some((p) => matchesPattern(p, type) || (short !== null && matchesPattern(p, short)));
}

function agentOf(payload: Record<string, unknown>): string | null {
  for (const key of ['agent', 'agent_slug', 'assignee']) {
    if (typeof payload[key] === 'string') return payload[key] as string;
  }
  return null;
}

/** Whether a subscription receives an event: scope (a project-scoped one hears only its project), patterns, filter. */
export function subscriptionMatches(sub: Matchable, event: MatchableEvent): boolean {
  if (sub.project_id !== null && sub.project_id !== event.project_id) return false;
  if (!typeMatches(sub.events, event.type)) return false;
  if (sub.filter.project_id !== undefined && sub.filter.project_id !== event.project_id) return false;
  if (sub.filter.agent !== undefined) {
    const agent = agentOf(event.payload ?? {});
    if (agent === null || !matchesPattern(sub.filter.agent, agent)) return false;
  }
  return true;
}
