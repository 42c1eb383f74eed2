import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { RoleService } from '../../core/roles.ts';
import type { HarnessAvailability, HarnessRegistry, HarnessReport } from '../../core/ports/harness.ts';

/** A report counts for this many intervals: a worker may miss two (a busy database) and still count. */
const FRESH_INTERVALS = 3;

export interface ReporterDeps {
  harnesses(): HarnessRegistry | null;
  availability(): HarnessAvailability | null;
  intervalMs: number;
  logger: Logger;
  /** The image this worker's runtime runs attempts in, when it does (the CLI is looked for there, not here). */
  commandsIn?: string;
}

/**
 * Tells the platform which harnesses this worker can run: at start, every `worker.harness_report_seconds`,
 * and at once when an attempt found its harness missing. Each harness goes through the registry's own
 * availability check (binary found, credentials present in the environment, as a login file or a
 * system secret shared with jobs). Stopping withdraws the report. Job creation refuses a job whose
 * harness no worker that reported recently can run (docs/harnesses.md, "Refused at create").
 */
export class HarnessReporter implements RoleService {
  readonly name = 'harness-reporter';
  readonly workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(private readonly deps: ReporterDeps) {}

  async start(): Promise<void> {
    this.stopped = false;
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.deps.intervalMs);
    this.timer.unref();
  }

  /** Reports now; one report at a time, and a call while one runs makes one more after it. */
  refresh(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.once().catch((err) => this.deps.logger.warn({ err }, 'could not report which harnesses this worker can run'));
      } while (this.again && !this.stopped);
    })().finally(() => (this.running = null));
    return this.running;
  }

  private async once(): Promise<void> {
    const registry = this.deps.harnesses();
    const availability = this.deps.availability();
    if (!registry || !availability || this.stopped) return;
    const harnesses: Record<string, HarnessReport> = {};
    for (const def of registry.list()) {
      const status = await registry.auth(def.id, {}, this.deps.commandsIn ? { commandsIn: this.deps.commandsIn } : {});
      harnesses[def.id] = {
        available: status.available,
        command: def.command ?? def.id,
        reason: status.reason,
        ...(status.missing ? { missing: status.missing } : {}),
        ...(status.present?.length ? { present: status.present } : {}),
      };
    }
    if (this.stopped) return;
    await availability.report({ workerId: this.workerId, harnesses, freshSeconds: (this.deps.intervalMs / 1000) * FRESH_INTERVALS });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
    await this.deps
      .availability()
      ?.withdraw(this.workerId)
      .catch((err) => this.deps.logger.warn({ err }, 'could not withdraw the harness report of this worker'));
  }
}
