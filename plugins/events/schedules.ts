import Boom from '@hapi/boom';
import { inject, injectable, type InjectionToken } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import type { Notifier } from '../../core/db/notify.ts';
import { refusePlatformEvent } from './service.ts';
import { Conflict } from '../../core/errors.ts';
import { isDeepStrictEqual } from 'node:util';

export interface Schedule {
  id: string;
  project_id: string;
  name: string | null;
  cron: string;
  event_type: string;
  payload: Record<string, unknown>;
  enabled: boolean;
  created_by: string | null;
  last_fired_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type ScheduleInput = Pick<Schedule, 'cron' | 'event_type' | 'payload' | 'enabled'> & { name?: string | null };
export type ScheduleChanges = Partial<ScheduleInput>;

/** Token of the notifier that asks orchestrators to re-sync a project's cron schedules. */
export const ScheduleRequests = Symbol('ScheduleRequests') as InjectionToken<Notifier>;

const stored = (changes: ScheduleChanges) => (changes.payload ? { ...changes, payload: JSON.stringify(changes.payload) } : changes);

/**
 * Project schedules: a cron expression that emits an event (type and payload of the schedule's
 * own, source cron) through the same path as every other event. Every change asks the
 * orchestrators to re-sync the project once it commits.
 */
@injectable()
export class Schedules {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(ScheduleRequests) private readonly resync: Notifier,
  ) {}

  list(projectId: string, f: ListQuery & { enabled?: boolean }): Promise<Page<Schedule>> {
    const q = this.db('schedules').where({ project_id: projectId });
    if (f.enabled !== undefined) q.where({ enabled: f.enabled });
    return paginate<Schedule, Schedule>(q, f, (r) => r, 'schedules');
  }

  async get(projectId: string, id: string, db: Db = this.db): Promise<Schedule> {
    const row = await db('schedules').where({ id, project_id: projectId }).first();
    if (!row) throw Boom.notFound(`schedule ${id} not found`);
    return row;
  }

  create(projectId: string, creatorId: string, input: ScheduleInput): Promise<Schedule> {
    refusePlatformEvent(input.event_type);
    return this.db.transaction(async (trx) => {
      const [row] = await trx('schedules')
        .insert({ id: newId('sch'), project_id: projectId, created_by: creatorId, ...stored(input) })
        .returning('*');
      this.resync.afterCommit(trx, projectId);
      return row;
    });
  }

  /**
   * Find or create by name in the project: the newest schedule of that name when its cron, event
   * type, payload and enabled state match; none creates it; otherwise 409 naming what differs.
   * Ensures of one project take turns (names are not unique in the table).
   */
  ensure(projectId: string, creatorId: string, input: ScheduleInput & { name: string }): Promise<{ schedule: Schedule; created: boolean }> {
    refusePlatformEvent(input.event_type);
    return this.db.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?))', ['schedules.ensure', projectId]);
      const found: Schedule | undefined = await trx('schedules')
        .where({ project_id: projectId, name: input.name })
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .first();
      if (!found) {
        const [row] = await trx('schedules')
          .insert({ id: newId('sch'), project_id: projectId, created_by: creatorId, ...stored(input) })
          .returning('*');
        this.resync.afterCommit(trx, projectId);
        return { schedule: row, created: true };
      }
      const differing = (['cron', 'event_type', 'payload', 'enabled'] as const).filter((f) => !isDeepStrictEqual(found[f], input[f]));
      if (differing.length)
        throw new Conflict(`schedule ${input.name} (${found.id}) exists with other ${differing.join(', ')}`, { fields: differing, id: found.id });
      return { schedule: found, created: false };
    });
  }

  update(projectId: string, id: string, changes: ScheduleChanges): Promise<Schedule> {
    if (changes.event_type !== undefined) refusePlatformEvent(changes.event_type);
    return this.db.transaction(async (trx) => {
      await this.get(projectId, id, trx);
      const [row] = await trx('schedules')
        .where({ id })
        .update({ ...stored(changes), updated_at: trx.fn.now() })
        .returning('*');
      this.resync.afterCommit(trx, projectId);
      return row;
    });
  }

  async remove(projectId: string, id: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      await this.get(projectId, id, trx);
      await trx('schedules').where({ id }).delete();
      this.resync.afterCommit(trx, projectId);
    });
  }
}
