import type { Db } from '../../core/db/knex.ts';
import type { WorkEngine } from '../../core/work/engine.ts';
import type { WorkContext, WorkQueue } from '../../core/work/queue.ts';
import type { WorkItem } from '../../core/work/repository.ts';
import type { DeployRow } from './repository.ts';
import { carryOut, type DeployRunDeps } from './deploy-run.ts';
import { emitDeployEvent } from './events.ts';

/** A direct deploy's work item: the deploy id is its key. */
export interface DeployWork extends Record<string, unknown> {
  actor_id: string | null;
}

/** What the accepting process gives its own run (an awaiting deploy action's echo of the deployer's lines). */
export interface DeployHere {
  echo?: (line: string) => void;
}

/**
 * Direct deploys on the work engine (core/work, queue `deploys`): the process that accepts a deploy
 * records it and its work item leased to itself in one transaction and carries it out at once; if
 * that process dies, its lease runs out and an orchestrator takes the deploy over and carries it out
 * again (the deployer's deploy is idempotent: it converges the environment on the release). After
 * `MAX_ATTEMPTS` the deploy ends failed, saying why.
 */
export class DirectDeploys {
  readonly queue: WorkQueue<DeployWork, DeployHere>;

  constructor(
    private readonly d: DeployRunDeps,
    engine: WorkEngine,
  ) {
    this.queue = engine.define<DeployWork, DeployHere>({
      name: 'deploys',
      concurrency: 4,
      maxAttempts: 3,
      retry: { initialMs: 2_000, factor: 2, maxMs: 60_000 },
      run: (ctx) => this.run(ctx),
      dead: (key, payload, error, trx) => this.failed(key, payload, error, trx),
    });
  }

  private due: (deploy: DeployRow, actorId: string | null) => Promise<DeployRow | null> = async () => null;

  /** What moves a `waiting` deploy on when its item runs (deploy-reviews.ts): the deploy, now running, to carry out; else null. */
  onDue(fn: (deploy: DeployRow, actorId: string | null) => Promise<DeployRow | null>): void {
    this.due = fn;
  }

  /** In the transaction that records `deploy`: its work item, leased to this process (`start` it once committed). */
  accept(deploy: DeployRow, actorId: string | null, trx: Db): Promise<WorkItem> {
    return this.queue.acceptHere(deploy.id, { actor_id: actorId }, trx);
  }

  /** Carries the accepted deploy out here; resolves once it ended (or went back to the queue). */
  start(item: WorkItem, echo?: (line: string) => void): Promise<void> {
    return this.queue.execute(item, { echo }).catch((err) => this.d.logger.error({ err, deployId: item.key }, 'deploy work failed unexpectedly'));
  }

  /** Waits for the deploys running here (server stop). */
  drain(): Promise<void> {
    return this.queue.drain();
  }

  private async run(ctx: WorkContext<DeployWork, DeployHere>): Promise<void> {
    let deploy = await this.d.repo.deployRow(ctx.key);
    // Held by its environment's protection until now (its wait timer ran out): it starts, or its pipeline does.
    if (deploy?.status === 'waiting') deploy = (await this.due(deploy, ctx.payload.actor_id)) ?? undefined;
    // Ended already (an earlier owner finished it just as its lease ran out), or its environment was deleted.
    if (!deploy || deploy.status !== 'running') return;
    const env = await this.d.repo.byId(deploy.environment_id);
    if (!env) return;
    await carryOut(this.d, env, deploy, ctx.payload.actor_id, { echo: ctx.here?.echo, fence: (trx) => ctx.fence(trx), attempt: ctx.attempt });
  }

  /** Every attempt failed (the database away, the process dying each time): the deploy ends failed and says so. */
  private async failed(key: string, work: DeployWork, error: string, trx: Db): Promise<void> {
    const deploy = await this.d.repo.deployRow(key, trx);
    if (!deploy || deploy.status !== 'running') return;
    const env = await this.d.repo.byId(deploy.environment_id, trx);
    if (!env) return;
    const message = `the deploy could not be carried out (${this.queue.name} work gave up after its last attempt): ${error}`;
    const finished = await this.d.repo.finishDeploy(deploy.id, { status: 'failed', error_message: message, services: [] }, trx);
    const seq = (await this.d.logs.lastSeq(deploy.id, trx)) + 1;
    await this.d.logs.append(deploy.id, [{ seq, stream: 'system', line: `deploy failed: ${message}` }], trx);
    await emitDeployEvent(trx, 'system.deploy.failed', env, finished, work.actor_id);
  }
}
