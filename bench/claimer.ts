/**
 * One claimer process of the claim-throughput benchmark (bench/jobs.ts forks eight).
 * argv: database url, owner, batch size. It connects, says `ready`, waits for `go` (which
 * carries the time limit), claims until no ready job is left or the time is up, sends its log
 * back and waits for `exit` (so the parent counts its CPU time while it still exists).
 */
import { createKnex } from '../core/db/knex.ts';
import { createLogger } from '../core/logger.ts';
import { claimLoop, claimsOver } from './claim-loop.ts';

const [url, owner, batch] = process.argv.slice(2);
const db = createKnex(url, 1, createLogger('silent'));
const claims = claimsOver(db, url);
const send = (m: unknown) => new Promise<void>((resolve) => process.send!(m, () => resolve()));
const next = () => new Promise((resolve) => process.once('message', resolve));

try {
  await db.raw('SELECT 1'); // the connection is open before the clock starts
  const go = next() as Promise<{ until: number }>;
  await send({ type: 'ready' });
  const { until } = await go;
  const log = await claimLoop(claims, db, owner, Number(batch), until);
  const exit = next();
  await send({ type: 'done', log });
  await exit;
} catch (e) {
  await send({ type: 'error', message: (e as Error).stack ?? String(e) });
} finally {
  await db.destroy();
  process.disconnect();
}
