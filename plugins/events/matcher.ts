import { matchesPattern } from '../../core/events/patterns.ts';
import type { EventSource } from '../../core/events/emit.ts';
import { Problems, isObject } from '../../domain/manifest/problems.ts';
import { readTrigger, type TriggerClause } from '../../domain/manifest/triggers.ts';
import type { Manifest } from '../../domain/manifest/types.ts';

/** What matching reads of an event. */
export interface RoutableEvent {
  type: string;
  source: EventSource;
  ref_branch: string | null;
  payload: Record<string, unknown>;
}

export type OwnerKind = 'pipeline' | 'workflow';

/** A pipeline or workflow of the manifest that has a trigger. */
export interface TriggerOwner {
  kind: OwnerKind;
  name: string;
  trigger: unknown;
}

/** The decision for one owner: matched (by which clause), or why not. */
export type Decision = { kind: OwnerKind; name: string } & ({ matched: true; trigger: string } | { matched: false; reason: string });

type Verdict = { ok: true } | { ok: false; reason: string };
const yes: Verdict = { ok: true };
const no = (reason: string): Verdict => ({ ok: false, reason });

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const list = (patterns: string[]) => patterns.map((p) => `'${p}'`).join(', ');

/** Every pipeline and workflow of the manifest with a `trigger`, in manifest order (pipelines first). */
export function triggerOwners(manifest: Manifest): TriggerOwner[] {
  const owners: TriggerOwner[] = [];
  for (const [name, def] of Object.entries(manifest.pipelines ?? {}))
    if (def.trigger !== undefined) owners.push({ kind: 'pipeline', name, trigger: def.trigger });
  for (const [name, def] of Object.entries(manifest.workflows ?? {}))
    if (def.trigger !== undefined) owners.push({ kind: 'workflow', name, trigger: def.trigger });
  return owners;
}

/** The branch a push went to: `ref_branch`, else the payload's `ref` when it is `refs/heads/<branch>`. */
export function pushedBranch(event: RoutableEvent): string | null {
  if (event.ref_branch) return event.ref_branch;
  const ref = str(event.payload.ref);
  return ref?.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : null;
}

/** The base branch of a pull request event: `pull_request.base.ref`, else `base_branch`. */
export function baseBranch(payload: Record<string, unknown>): string | null {
  const pr = isObject(payload.pull_request) ? payload.pull_request : {};
  const base = isObject(pr.base) ? pr.base : {};
  return str(base.ref) ?? str(payload.base_branch);
}

/** The pipeline and workflow a system event came from (its payload or its `metadata`). */
export function originOf(payload: Record<string, unknown>): { pipeline: string | null; workflow: string | null } {
  const meta = isObject(payload.metadata) ? payload.metadata : {};
  return { pipeline: str(payload.pipeline_name) ?? str(meta.pipeline_name), workflow: str(payload.workflow_name) ?? str(meta.workflow_name) };
}

function typeIs(event: RoutableEvent, type: string): Verdict {
  return event.type === type ? yes : no(`event type is ${event.type}, not ${type}`);
}

function anyPattern(patterns: string[] | null, value: string | null, what: string): Verdict {
  if (patterns === null) return yes;
  if (value === null) return no(`the event names no ${what}`);
  return patterns.some((p) => matchesPattern(p, value)) ? yes : no(`${what} '${value}' does not match ${list(patterns)}`);
}

/** Whether one clause fires for the event (pure: no I/O). */
export function matchClause(clause: TriggerClause, event: RoutableEvent, owner: TriggerOwner): Verdict {
  switch (clause.kind) {
    case 'push': {
      const type = typeIs(event, 'vcshost.push');
      return type.ok ? anyPattern(clause.branches, pushedBranch(event), 'branch') : type;
    }
    case 'pull_request': {
      const type = typeIs(event, 'vcshost.pull_request');
      if (!type.ok) return type;
      const action = str(event.payload.action);
      if (clause.actions && !(action && clause.actions.includes(action)))
        return no(`action ${action ? `'${action}'` : '(none)'} is not one of ${clause.actions.join(', ')}`);
      return anyPattern(clause.base_branches, baseBranch(event.payload), 'base branch');
    }
    case 'cron': {
      const type = typeIs(event, 'cron.tick');
      if (!type.ok) return type;
      const { trigger_name: name, trigger_kind: kind, schedule } = event.payload;
      if (name !== owner.name || (kind !== undefined && kind !== owner.kind)) return no(`the tick is for ${str(kind) ?? 'trigger'} ${str(name) ?? '(none)'}`);
      return schedule === clause.schedule ? yes : no(`the tick is for schedule '${String(schedule)}', the trigger's is '${clause.schedule}'`);
    }
    case 'system': {
      if (event.source !== 'system') return no(`system triggers take events from source system, not ${event.source}`);
      if (!matchesPattern(`system.${clause.event}`, event.type)) return no(`event type ${event.type} does not match system.${clause.event}`);
      return anyPattern(clause.pipelines, originOf(event.payload).pipeline, 'pipeline');
    }
    case 'chatapp': {
      const type = typeIs(event, `chatapp.${clause.event}`);
      const channel = str(event.payload.channel)?.replace(/^#/, '') ?? null;
      return type.ok ? anyPattern(clause.channels?.map((c) => c.replace(/^#/, '')) ?? null, channel, 'channel') : type;
    }
    case 'custom': {
      if (clause.type !== null && !matchesPattern(clause.type, event.type)) return no(`event type ${event.type} does not match '${clause.type}'`);
      return clause.source === null || clause.source === event.source ? yes : no(`event source ${event.source} is not ${clause.source}`);
    }
    case 'manual':
      return no('manual: runs only when started explicitly');
  }
}

/** A clause in words, for the routing record: `vcshost.push`, `cron '0 3 * * *'`, `system.job.failed`. */
export function describeClause(clause: TriggerClause): string {
  switch (clause.kind) {
    case 'push':
    case 'pull_request':
      return `vcshost.${clause.kind}`;
    case 'cron':
      return `cron '${clause.schedule}'`;
    case 'system':
      return `system.${clause.event}`;
    case 'chatapp':
      return `chatapp.${clause.event}`;
    case 'custom':
      return `event ${[clause.type, clause.source && `from ${clause.source}`].filter(Boolean).join(' ')}`;
    case 'manual':
      return 'manual';
  }
}

/**
 * Whether the owner's trigger fires for the event: the first matching clause, else every clause's
 * reason. A system event never triggers the pipeline or workflow it came from (anti-recursion).
 */
export function decide(owner: TriggerOwner, event: RoutableEvent): Decision {
  const id = { kind: owner.kind, name: owner.name };
  const problems = new Problems();
  const clauses = readTrigger(owner.trigger, `${owner.kind}s.${owner.name}.trigger`, problems);
  if (problems.list.length > 0) return { ...id, matched: false, reason: `invalid trigger: ${problems.list.map((p) => `${p.path}: ${p.message}`).join('; ')}` };
  if (clauses.length === 0) return { ...id, matched: false, reason: 'the trigger defines no event' };
  if (event.source === 'system') {
    const origin = originOf(event.payload)[owner.kind];
    if (origin === owner.name) return { ...id, matched: false, reason: `anti-recursion: the event came from ${owner.kind} ${owner.name} itself` };
  }
  const reasons: string[] = [];
  for (const clause of clauses) {
    const verdict = matchClause(clause, event, owner);
    if (verdict.ok) return { ...id, matched: true, trigger: describeClause(clause) };
    reasons.push(clauses.length > 1 ? `${describeClause(clause)}: ${verdict.reason}` : verdict.reason);
  }
  return { ...id, matched: false, reason: reasons.join('; ') };
}

/** The decision of every trigger of the manifest for the event. */
export function decideAll(manifest: Manifest, event: RoutableEvent): Decision[] {
  return triggerOwners(manifest).map((owner) => decide(owner, event));
}
