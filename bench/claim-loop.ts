import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../core/db/knex.ts';
import { container } from '../core/di.ts';
import { Tokens } from '../core/tokens.ts';
import { declareDirectories, ProjectDirectorySlotToken, type ProjectDirectory } from '../core/ports/directory.ts';
import type { Config } from '../core/config/schema.ts';
import { createLogger } from '../core/logger.ts';
import { Claims } from '../plugins/jobs/claims/claims.ts';
import { PriceBookLookup } from '../plugins/jobs/receipts/receipt-pricing.ts';
import { clock } from './lib.ts';

/** What one claimer did: per claimNext call its end (wall clock ms), duration (ms) and jobs claimed; every id it got. */
export interface ClaimLog {
  owner: string;
  ends: number[];
  durations: number[];
  counts: number[];
  /** Calls that returned nothing while ready rows remained (locked by other claimers): retried after 1 ms. */
  empty: number;
  /** Stopped by the time limit (ready jobs may remain), not by an empty backlog. */
  timedOut: boolean;
  ids: string[];
  start: number;
  end: number;
}

/** The jobs plugin's real claimer over `db`, built by the container as the plugin's would be. */
export function claimsOver(db: Db, databaseUrl: string): Claims {
  const scope = container.createChildContainer();
  scope.registerInstance(Tokens.Db, db);
  scope.registerInstance(Tokens.ControlDb, db);
  scope.registerInstance(Tokens.DatabaseUrl, databaseUrl);
  scope.registerInstance(Tokens.Logger, createLogger('silent'));
  // Claiming prices nothing, and reads of the directory only a project's org (for the running-attempt
  // quota, set out of reach: the loops do not end their attempts): the plugins are not loaded here.
  scope.registerInstance(Tokens.Config, { limits: { org: { running_attempts: 1_000_000_000 } } } as unknown as Config);
  declareDirectories(scope);
  const orgs: Pick<ProjectDirectory, 'byIds'> = {
    byIds: (ids, trx) => (trx ?? db)('projects').whereIn('id', ids).select('id', 'org_id'),
  };
  scope.resolve(ProjectDirectorySlotToken).fill(orgs as ProjectDirectory);
  scope.registerInstance(PriceBookLookup, () => null);
  return scope.resolve(Claims);
}

/** claimNext(owner, batch) until no ready job is left, or until the wall clock (ms, see `clock`) passes `until`. */
export async function claimLoop(claims: Pick<Claims, 'claimNext'>, db: Db, owner: string, batch: number, until = Infinity): Promise<ClaimLog> {
  const log: ClaimLog = { owner, ends: [], durations: [], counts: [], empty: 0, timedOut: false, ids: [], start: clock(), end: 0 };
  for (;;) {
    if (clock() >= until) {
      log.timedOut = true;
      break;
    }
    const t0 = performance.now();
    const got = await claims.claimNext(owner, batch);
    const t1 = performance.now();
    if (got.length === 0) {
      const { rows } = await db.raw(`SELECT EXISTS (SELECT 1 FROM jobs WHERE phase = 'ready') AS more`);
      if (!rows[0].more) break;
      log.empty++;
      await sleep(1);
      continue;
    }
    log.ends.push(performance.timeOrigin + t1);
    log.durations.push(t1 - t0);
    log.counts.push(got.length);
    for (const c of got) log.ids.push(c.job.id);
  }
  log.end = clock();
  return log;
}
