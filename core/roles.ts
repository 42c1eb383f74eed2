import type { Role } from './config/schema.ts';
import type { Scheduler } from './ports/scheduler.ts';
import { Registry } from './registry.ts';

/** Background work that runs while a role runs: a domain's claimer, reaper, event router. */
export interface RoleService {
  name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Domains add their background services to a role when their plugin registers; the kernel starts
 * them when that role runs here, after the role's own seams, and stops them first.
 */
export class RoleServices {
  private readonly services = new Map<Role, RoleService[]>();

  add(role: Role, service: RoleService): void {
    this.services.set(role, [...(this.services.get(role) ?? []), service]);
  }

  of(role: Role): RoleService[] {
    return this.services.get(role) ?? [];
  }
}

const HOUSEKEEPING_EVERY_MS = 60_000;

/** Periodic clean-up a domain does on its own tables (expired login challenges, …), run once a minute by one orchestrator. */
export type HousekeepingTask = () => Promise<void>;

export class Housekeeping extends Registry<HousekeepingTask> {
  async run(): Promise<void> {
    for (const task of this.entries) await task();
  }
}

/** The orchestrator owns time: the scheduler and its periodic housekeeping. */
export function schedulerService(housekeeping: Housekeeping, scheduler: Scheduler): RoleService {
  return {
    name: 'scheduler',
    async start() {
      scheduler.define('svc.housekeeping', () => housekeeping.run());
      await scheduler.start();
      await scheduler.every(HOUSEKEEPING_EVERY_MS, 'svc.housekeeping');
    },
    stop: () => scheduler.stop(),
  };
}
