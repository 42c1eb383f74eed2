import type { InjectionToken } from 'tsyringe';
import { inject, injectable } from '../../../core/di.ts';
import { HarnessUnavailable } from '../../../core/errors.ts';
import { isObject } from '../../../core/is-object.ts';
import type { HarnessAvailability } from '../../../core/ports/harness.ts';
import { ManifestDefaultsToken, type ManifestDefaults } from '../../../core/ports/manifest.ts';
import type { SecretContext } from '../../../core/ports/secrets.ts';
import type { AgentRequest } from '../../../domain/manifest/profiles.ts';
import type { AgentsConfig } from '../../../domain/manifest/types.ts';

/** The harnesses domain's HarnessAvailability when it is loaded (it may register after jobs). */
export const HarnessAvailabilityLookup = Symbol('HarnessAvailabilityLookup') as InjectionToken<() => HarnessAvailability | null>;

/** The create fields that say which harness runs (stored as the job's `harness`). */
export const HARNESS_FIELDS = [
  'harness',
  'harness_profile',
  'harness_variant',
  'harness_options',
  'model',
  'reasoning_effort',
  'harness_profile_override',
] as const;

/** A job that runs a harness: an agent job (no `hints.step`), or a step of kind agent. Scripts and actions run none. */
export function runsHarness(request: Record<string, unknown>): boolean {
  const step = isObject(request.hints) && isObject(request.hints.step) ? request.hints.step : null;
  return step === null || step.kind === 'agent';
}

export const harnessFields = (request: Record<string, unknown>): AgentRequest =>
  Object.fromEntries(HARNESS_FIELDS.filter((f) => request[f] !== undefined).map((f) => [f, request[f]])) as AgentRequest;

/**
 * Before new work is accepted: a job whose harness no worker that reported recently can run is
 * refused (HarnessUnavailable, 422, naming the harness and what it lacks) rather than accepted and
 * failed a moment later. The harnesses domain decides from the workers' reports (a remembered
 * read: most creations make no database round trip for it); the project's `x-svc.agents` comes with
 * its manifest defaults. docs/harnesses.md, "Refused at create".
 */
@injectable()
export class HarnessCheck {
  constructor(
    @inject(HarnessAvailabilityLookup) private readonly availability: () => HarnessAvailability | null,
    @inject(ManifestDefaultsToken) private readonly manifest: ManifestDefaults,
  ) {}

  /** Each request (manifest defaults already under it) that runs a harness; `what` names the job in the message. */
  async require(projectId: string, requests: Record<string, unknown>[], ctx: SecretContext, what?: (i: number) => string): Promise<void> {
    const availability = this.availability();
    if (!availability) return;
    const asked = new Set<string>();
    let agents: AgentsConfig | undefined;
    let read = false;
    for (const [i, request] of requests.entries()) {
      if (!runsHarness(request)) continue;
      const fields = harnessFields(request);
      const key = JSON.stringify(fields);
      if (asked.has(key)) continue;
      asked.add(key);
      if (!read) agents = await this.manifest.jobAgents?.(projectId);
      read = true;
      try {
        await availability.requireRunnable(fields, agents, ctx);
      } catch (err) {
        if (err instanceof HarnessUnavailable && what) throw new HarnessUnavailable(err.harnesses, `${what(i)} cannot be created: ${err.message}`);
        throw err;
      }
    }
  }
}
