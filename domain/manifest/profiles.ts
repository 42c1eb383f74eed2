/**
 * Which harness runs a job: the job's harness fields over the profiles at `x-svc.agents`. Pure; the
 * harness registry supplies names and availability (`HarnessRegistry.resolve` wires both).
 *
 * Order of choice: `harness_profile_override`, else an explicit `harness`, else `harness_profile`,
 * else the manifest's profile named `default`, else the server's default harness. A profile is an
 * ordered list; `profile` entries expand in place (cycles are rejected). With
 * `availability.drop_unavailable` entries whose harness is not available are dropped; the first
 * remaining entry runs and the rest are its fallbacks. Explicit job fields (`model`,
 * `reasoning_effort`, `harness_options.*`, `harness_variant`) override every entry's own.
 */
import { REASONING_EFFORTS, type HarnessAuthStatus, type ReasoningEffort } from '../../core/ports/harness.ts';
import type { AgentProfileEntry, AgentsConfig } from './types.ts';
import { isObject } from '../../core/is-object.ts';

/** The harness fields of a job (CreateJobRequest), as stored. */
export interface AgentRequest {
  harness?: string;
  harness_profile?: string;
  harness_variant?: string;
  harness_options?: { variant?: string; model?: string; reasoning_effort?: string };
  model?: string;
  reasoning_effort?: string;
  harness_profile_override?: Record<string, unknown>;
}

export interface AgentCandidate {
  harness: string;
  model?: string;
  reasoningEffort?: ReasoningEffort;
  variant?: string;
}

export type AgentSource = 'override' | 'harness' | 'profile' | 'default_profile' | 'server_default';

export interface AgentChoice extends AgentCandidate {
  source: AgentSource;
  /** The profile the entries came from, when one did. */
  profile: string | null;
  /** Remaining entries, in order, for a caller that retries with the next one. */
  fallbacks: AgentCandidate[];
  dropped: { harness: string; reason: string }[];
}

/** The entries a request expands to, before availability is applied. */
export interface AgentPlan {
  source: AgentSource;
  profile: string | null;
  candidates: AgentCandidate[];
  dropUnavailable: boolean;
}

export interface ProfileLookups {
  /** Canonical harness id for an id or alias, undefined when unknown. */
  canonical(idOrAlias: string): string | undefined;
  /** Variant names a harness declares (undefined: it declares none, so any name is passed through). */
  variants?(harnessId: string): string[] | undefined;
  /** Used when neither the job nor the manifest names anything. */
  defaultHarness: string;
}

/** A request that names something that does not exist, or a profile that cannot be resolved: the job cannot run. */
export class ProfileError extends Error {
  override name = 'ProfileError';
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

function effort(value: unknown, where: string): ReasoningEffort | undefined {
  if (value === undefined || value === null) return undefined;
  if (!(REASONING_EFFORTS as readonly unknown[]).includes(value))
    throw new ProfileError(`${where}: reasoning_effort must be one of ${REASONING_EFFORTS.join(', ')}`);
  return value as ReasoningEffort;
}

/** Flattens `profile` references depth-first; `trail` is the chain of profiles being expanded. */
function expand(
  name: string,
  profiles: Record<string, AgentProfileEntry[]>,
  trail: string[],
): { harness: string; model?: unknown; reasoning_effort?: unknown }[] {
  if (trail.includes(name)) throw new ProfileError(`Profile cycle detected in x-svc.agents: ${[...trail.slice(trail.indexOf(name)), name].join(' -> ')}`);
  const entries = Object.hasOwn(profiles, name) ? profiles[name] : undefined;
  if (!Array.isArray(entries)) throw new ProfileError(`Unknown harness profile '${name}'; define it under x-svc.agents.profiles`);
  return expandEntries(entries, profiles, [...trail, name], `profile '${name}'`);
}

function expandEntries(entries: unknown[], profiles: Record<string, AgentProfileEntry[]>, trail: string[], where: string) {
  return entries.flatMap((entry, i) => {
    if (!isObject(entry)) throw new ProfileError(`${where}[${i}]: an entry is an object with harness or profile`);
    if (str(entry.profile)) {
      if (entry.harness !== undefined) throw new ProfileError(`${where}[${i}]: a profile entry has either harness or profile, not both`);
      return expand(entry.profile as string, profiles, trail);
    }
    if (!str(entry.harness)) throw new ProfileError(`${where}[${i}]: a profile entry needs harness or profile`);
    return [{ harness: entry.harness as string, model: entry.model, reasoning_effort: entry.reasoning_effort }];
  });
}

/** `harness_profile_override`: an inline profile `{entries: [...], drop_unavailable?}`, or one entry `{harness, model?, reasoning_effort?}` / `{profile}`. */
function overrideEntries(override: Record<string, unknown>): { entries: unknown[]; drop?: boolean } {
  const drop = override.drop_unavailable;
  if (drop !== undefined && typeof drop !== 'boolean') throw new ProfileError('harness_profile_override.drop_unavailable must be true or false');
  if (override.entries !== undefined) {
    if (!Array.isArray(override.entries) || override.entries.length === 0)
      throw new ProfileError('harness_profile_override.entries must be a non-empty list of profile entries');
    return { entries: override.entries, drop: drop as boolean | undefined };
  }
  const { drop_unavailable: _ignored, ...entry } = override;
  return { entries: [entry], drop: drop as boolean | undefined };
}

/** Expands the request into its ordered candidates, with the job's explicit fields applied. */
export function planAgent(request: AgentRequest, agents: AgentsConfig | undefined, lookups: ProfileLookups): AgentPlan {
  const profiles = (isObject(agents?.profiles) ? agents!.profiles : {}) as Record<string, AgentProfileEntry[]>;
  let dropUnavailable = agents?.availability?.drop_unavailable === true;
  let source: AgentSource;
  let profile: string | null = null;
  let raw: { harness: string; model?: unknown; reasoning_effort?: unknown }[];

  if (request.harness_profile_override !== undefined && request.harness_profile_override !== null) {
    if (!isObject(request.harness_profile_override)) throw new ProfileError('harness_profile_override must be an object');
    const { entries, drop } = overrideEntries(request.harness_profile_override);
    raw = expandEntries(entries, profiles, [], 'harness_profile_override');
    if (drop !== undefined) dropUnavailable = drop;
    source = 'override';
  } else if (str(request.harness)) {
    raw = [{ harness: request.harness! }];
    source = 'harness';
  } else if (str(request.harness_profile)) {
    profile = request.harness_profile!;
    raw = expand(profile, profiles, []);
    source = 'profile';
  } else if (Object.hasOwn(profiles, 'default')) {
    profile = 'default';
    raw = expand(profile, profiles, []);
    source = 'default_profile';
  } else {
    raw = [{ harness: lookups.defaultHarness }];
    source = 'server_default';
  }
  if (raw.length === 0) throw new ProfileError(`profile '${profile}' has no entries`);

  const options = isObject(request.harness_options) ? request.harness_options : {};
  const model = str(options.model) ?? str(request.model);
  const reasoning = effort(options.reasoning_effort, 'harness_options') ?? effort(request.reasoning_effort, 'job');
  const variant = str(options.variant) ?? str(request.harness_variant);

  const candidates = raw.map((entry, i): AgentCandidate => {
    if (entry.harness.includes(':')) {
      throw new ProfileError(`harness '${entry.harness}': the harness:variant syntax is not parsed; use harness_options.variant`);
    }
    const harness = lookups.canonical(entry.harness);
    if (!harness) throw new ProfileError(`unknown harness '${entry.harness}'`);
    const candidate: AgentCandidate = { harness };
    const m = model ?? str(entry.model);
    const r = reasoning ?? effort(entry.reasoning_effort, `${profile ? `profile '${profile}'` : source}[${i}]`);
    if (m) candidate.model = m;
    if (r) candidate.reasoningEffort = r;
    if (variant) {
      const known = lookups.variants?.(harness);
      if (known && !known.includes(variant)) throw new ProfileError(`harness ${harness} has no variant '${variant}' (known: ${known.join(', ')})`);
      candidate.variant = variant;
    }
    return candidate;
  });
  return { source, profile, candidates, dropUnavailable };
}

/** Applies availability (when the plan drops unavailable entries) and picks the first remaining candidate. */
export function chooseAgent(plan: AgentPlan, availability: (harnessId: string) => HarnessAuthStatus | undefined): AgentChoice {
  const dropped: AgentChoice['dropped'] = [];
  const kept = plan.candidates.filter((c) => {
    if (!plan.dropUnavailable) return true;
    const status = availability(c.harness);
    if (!status || status.available) return true;
    dropped.push({ harness: c.harness, reason: status.reason });
    return false;
  });
  if (kept.length === 0) {
    const what = plan.profile ? `profile '${plan.profile}'` : plan.source;
    throw new ProfileError(`no available harness in ${what}: ${dropped.map((d) => `${d.harness} (${d.reason})`).join('; ')}`);
  }
  const [first, ...fallbacks] = kept;
  return { ...first, source: plan.source, profile: plan.profile, fallbacks, dropped };
}

/** planAgent then chooseAgent, for callers that hold availability already. */
export function resolveAgent(
  request: AgentRequest,
  agents: AgentsConfig | undefined,
  lookups: ProfileLookups,
  availability: (harnessId: string) => HarnessAuthStatus | undefined = () => undefined,
): AgentChoice {
  return chooseAgent(planAgent(request, agents, lookups), availability);
}
