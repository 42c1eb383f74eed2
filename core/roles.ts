import type { DependencyContainer } from './di.ts';
import type { Role } from './config/schema.ts';
import { Tokens } from './tokens.ts';
import type { Scheduler } from './ports/scheduler.ts';

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

/** The orchestrator owns time: the scheduler and its periodic housekeeping. */
export function schedulerService(container: DependencyContainer, scheduler: Scheduler): RoleService {
  const db = container.resolve(Tokens.Db);
  return {
    name: 'scheduler',
    async start() {
      scheduler.define('svc.housekeeping', async () => {
        await db('auth_challenges').where('expires_at', '<', db.raw("now() - interval '1 hour'")).delete();
      });
      await scheduler.start();
      await scheduler.every(HOUSEKEEPING_EVERY_MS, 'svc.housekeeping');
    },
    stop: () => scheduler.stop(),
  };
}
