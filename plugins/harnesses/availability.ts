/**
 * Which harnesses the workers can run, from their reports (harness_reports), and the rule job
 * creation asks about: a job none of whose harnesses any recently reporting worker can run is
 * refused (HarnessUnavailable, 422) naming each harness and what it lacks. With no recent report
 * at all nothing is known (an API-only deployment whose workers come later), and nothing is refused.
 * docs/harnesses.md, "Refused at create".
 */
import type { Db } from '../../core/db/knex.ts';
import type { SharedMemo, SharedMemos } from '../../core/db/shared-memos.ts';
import { HarnessUnavailable } from '../../core/errors.ts';
import { isManagedModel } from '../../core/ports/inference.ts';
import type { HarnessAvailability, HarnessDefinition, HarnessRegistry, HarnessReport, WorkerHarnessReport } from '../../core/ports/harness.ts';
import type { SecretContext } from '../../core/ports/secrets.ts';
import type { AgentsConfig } from '../../domain/manifest/types.ts';
import { planAgent, ProfileError, type AgentCandidate, type AgentPlan, type AgentRequest } from '../../domain/manifest/profiles.ts';
import { DEFAULT_HARNESS } from './registry.ts';
import { REPORT_WRITES, type HarnessReportRepository } from './reports-repository.ts';
import type { HarnessAuth } from './service.ts';

/** A report that counts until `until` (this process's clock). */
interface FreshWorker {
  id: string;
  harnesses: Record<string, HarnessReport>;
  until: number;
}

/** The memo's one key: every fresh report. */
const FRESH = 'fresh';

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** `A, B or C + D`: the credential groups of a harness, any one of which it needs. */
function wanted(def: HarnessDefinition | undefined): string | null {
  const groups = def?.credentials?.env ?? [];
  if (!groups.length) return null;
  const names = groups.map((g) => g.join(' + '));
  return names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}

export class HarnessAvailabilityService implements HarnessAvailability {
  private readonly memo: SharedMemo<FreshWorker[]>;
  /** What this process last reported per worker: an unchanged report tells no other process. */
  private readonly sent = new Map<string, string>();

  constructor(
    private readonly db: Db,
    private readonly reports: HarnessReportRepository,
    memos: SharedMemos,
    private readonly registry: () => HarnessRegistry,
    private readonly auth: HarnessAuth,
  ) {
    this.memo = memos.memo<FreshWorker[]>('harness-reports', REPORT_WRITES);
  }

  async report({ workerId, harnesses, freshSeconds }: WorkerHarnessReport): Promise<void> {
    await this.reports.save(workerId, harnesses, freshSeconds);
    const body = JSON.stringify(harnesses);
    if (this.sent.get(workerId) === body) return;
    this.sent.set(workerId, body);
    this.memo.changed(this.db, FRESH);
  }

  async withdraw(workerId: string): Promise<void> {
    await this.reports.remove(workerId);
    this.sent.delete(workerId);
    this.memo.changed(this.db, FRESH);
  }

  /** Reports of workers that stopped counting a day ago or more (they died without withdrawing): housekeeping. */
  prune(): Promise<number> {
    return this.reports.pruneExpired(86_400);
  }

  /** The reports that count now: remembered across requests, so a create seldom reads them. */
  async freshWorkers(): Promise<FreshWorker[]> {
    const workers = await this.memo.get(FRESH, async () => {
      const at = Date.now();
      return (await this.reports.fresh()).map((r) => ({ id: r.worker_id, harnesses: r.harnesses, until: at + r.ms_left }));
    });
    const now = Date.now();
    return (workers ?? []).filter((w) => w.until > now);
  }

  async requireRunnable(request: AgentRequest, agents: AgentsConfig | undefined, ctx: SecretContext): Promise<void> {
    const workers = await this.freshWorkers();
    if (workers.length === 0) return;
    const registry = this.registry();
    let plan: AgentPlan;
    try {
      plan = planAgent(request ?? {}, agents, {
        canonical: (name) => registry.get(name)?.id,
        defaultHarness: DEFAULT_HARNESS,
      });
    } catch (err) {
      // A request that cannot be resolved (an unknown profile, say) fails its attempt with the reason, as before.
      if (err instanceof ProfileError) return;
      throw err;
    }
    const lacks = new Map<string, string>();
    for (const candidate of plan.candidates) {
      const lack = await this.lackOf(candidate, workers, ctx);
      if (lack === null) return;
      if (!lacks.has(candidate.harness)) lacks.set(candidate.harness, lack);
    }
    const harnesses = [...lacks.keys()];
    const where = `${plural(workers.length, 'worker')} reported; docs/harnesses.md, "Refused at create"`;
    if (harnesses.length === 1) throw new HarnessUnavailable(harnesses, `${harnesses[0]} cannot run on any worker: ${lacks.get(harnesses[0])} (${where})`);
    const what = plan.profile ? `profile '${plan.profile}'` : 'this job';
    const each = [...lacks].map(([h, lack]) => `${h}: ${lack}`).join('; ');
    throw new HarnessUnavailable(harnesses, `no harness of ${what} can run on any worker: ${each} (${where})`);
  }

  /**
   * Null when some fresh worker can run the candidate: it has the harness available, or has its
   * binary and the credentials come another way (a managed model brings its own; the job's secrets
   * hold a group the worker's environment lacks). Else what the closest worker lacks.
   */
  private async lackOf(candidate: AgentCandidate, workers: FreshWorker[], ctx: SecretContext): Promise<string | null> {
    const id = candidate.harness;
    const entries = workers.flatMap((w) => (Object.hasOwn(w.harnesses, id) ? [w.harnesses[id]] : []));
    if (entries.some((e) => e.available)) return null;
    if (entries.length === 0) return `no worker has this harness (those that reported do not know it)`;
    const def = this.registry().get(id);
    const withBinary = entries.filter((e) => e.missing === 'credentials');
    if (withBinary.length > 0) {
      if (isManagedModel(candidate.model)) return null;
      const groups = def?.credentials?.env ?? [];
      const secrets = def && groups.length ? await this.auth.secretNames(def, ctx) : new Set<string>();
      const satisfied = (e: HarnessReport) => groups.some((g) => g.every((n) => secrets.has(n) || (e.present ?? []).includes(n)));
      if (withBinary.some(satisfied)) return null;
      const names = wanted(def);
      return names
        ? `no credential ${names} (not in a worker's environment or login files, nor among the job's secrets)`
        : `no credentials: ${withBinary[0].reason}`;
    }
    const missingBinary = entries.filter((e) => e.missing === 'binary');
    if (missingBinary.length > 0) {
      const commands = [...new Set(missingBinary.map((e) => e.command))];
      const onPath = commands.every((c) => !c.includes('/')) ? ' on PATH' : '';
      return `the ${commands.join(' / ')} binary was not found${onPath}`;
    }
    return entries[0].reason;
  }
}
