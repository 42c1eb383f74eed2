import type { Logger } from 'pino';
import { Passes } from '../../core/passes.ts';
import type { RoleService } from '../../core/roles.ts';
import type { EnvironmentService } from './service.ts';

/**
 * The orchestrator's health reconciliation (docs/environments.md): every
 * `environments.health_interval_seconds`, the deployed, non-suspended environments' health is read
 * from the deployer and recorded (`system.environment.health.changed` on a change), so a container
 * that died behind svc's back shows as degraded without anyone asking.
 */
export class HealthReconciler implements RoleService {
  readonly name = 'environment-health';
  private readonly passes: Passes;

  constructor(
    service: EnvironmentService,
    private readonly intervalMs: number,
    logger: Logger,
  ) {
    this.passes = new Passes(
      async () => void (await service.reconcileHealth()),
      (err) => logger.error({ err }, 'environment health pass failed'),
    );
  }

  async start(): Promise<void> {
    this.passes.every(this.intervalMs);
    this.passes.wake();
  }

  stop(): Promise<void> {
    return this.passes.stop();
  }
}
