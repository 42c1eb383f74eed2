import type { DependencyContainer } from 'tsyringe';
import type { Role } from './config/schema.ts';
import { Tokens } from './tokens.ts';
import type { Scheduler } from './ports/scheduler.ts';

/** A role the kernel starts and stops; each domain that needs one hooks into these seams. */
export interface RoleProcess {
  readonly role: Role;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const HOUSEKEEPING_EVERY_MS = 60_000;

/**
 * The orchestrator owns time: it starts the scheduler and its periodic housekeeping. Job claiming,
 * event routing and the rest arrive with their domains.
 */
export function orchestratorRole(container: DependencyContainer, scheduler: Scheduler): RoleProcess {
  const db = container.resolve(Tokens.Db);
  return {
    role: 'orchestrator',
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

/** The worker role executes attempts; until execution lands it only marks its place in the lifecycle. */
export function workerRole(): RoleProcess {
  return { role: 'worker', start: async () => {}, stop: async () => {} };
}
