import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { RoleService } from '../../core/roles.ts';
import type { Notifier } from '../../core/db/notify.ts';
import { listen, type Listening } from '../../core/db/listen.ts';
import { SchedulerToken, type Scheduler } from '../../core/ports/scheduler.ts';
import { ManifestReaderToken, type ManifestReader } from '../../core/ports/manifest.ts';
import { emitEvent, type NewEvent } from '../../core/events/emit.ts';
import { cronTick } from '../../core/cron.ts';
import { readTrigger } from '../../domain/manifest/triggers.ts';
import type { Manifest } from '../../domain/manifest/types.ts';
import { triggerOwners, type OwnerKind } from './matcher.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import { ScheduleRequests } from './schedules.ts';

/** The scheduler job that fires every cron schedule; its data is `{key, project_id}`. */
export const CRON_JOB = 'svc.events.cron';
/** The channel that asks orchestrators to re-sync a project's cron schedules; the payload is project ids. */
export const SCHEDULES_CHANNEL = 'svc_schedules';
const FULL_SYNC_EVERY_MS = 10 * 60_000;

/** A cron trigger of the manifest: `trigger:<project>:<kind>:<name>`; a project schedule: `schedule:<id>`. */
const triggerKey = (projectId: string, kind: OwnerKind, name: string) => `trigger:${projectId}:${kind}:${name}`;
const scheduleKey = (id: string) => `schedule:${id}`;

/** The cron triggers of a manifest: key → schedule. */
export function cronTriggers(projectId: string, manifest: Manifest): Map<string, { kind: OwnerKind; name: string; schedule: string }> {
  const out = new Map<string, { kind: OwnerKind; name: string; schedule: string }>();
  for (const owner of triggerOwners(manifest)) {
    const clause = readTrigger(owner.trigger, '').find((c) => c.kind === 'cron');
    if (clause?.kind === 'cron') out.set(triggerKey(projectId, owner.kind, owner.name), { kind: owner.kind, name: owner.name, schedule: clause.schedule });
  }
  return out;
}

/**
 * Keeps the scheduler's cron jobs in line with what should fire: the cron triggers of each
 * project's current manifest and its enabled schedules (none for a deleted project). A project is
 * re-synced when asked (a manifest sync, a schedule change: NOTIFY on svc_schedules), and every
 * project with anything to fire at start and every ten minutes. `schedule_registrations` records
 * what was registered, so a re-sync knows what to cancel; a per-project advisory lock keeps
 * orchestrators from re-syncing one project at once. `fire` runs each tick: it emits the event
 * with a dedupe key of the key and the minute, so a tick is one event however often it runs.
 */
@injectable()
export class CronSync implements RoleService {
  readonly name = 'cron-sync';
  private listening: Listening | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly queued = new Set<string>();
  private draining: Promise<void> | null = null;
  private unsubscribe: () => void = () => undefined;
  private stopped = false;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.DatabaseUrl) private readonly databaseUrl: string,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(ManifestReaderToken) private readonly manifests: ManifestReader,
    @inject(ScheduleRequests) private readonly requests: Notifier,
    @inject(SchedulerToken) private readonly scheduler: Scheduler,
  ) {}

  async start(): Promise<void> {
    const ask = (payload: string) => void this.queue(payload.split(' ').filter(Boolean));
    this.unsubscribe = this.requests.onNotice(ask);
    this.listening = await listen(this.databaseUrl, SCHEDULES_CHANNEL, ask, this.logger);
    this.timer = setInterval(() => void this.syncAll(), FULL_SYNC_EVERY_MS);
    await this.syncAll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe();
    if (this.timer) clearInterval(this.timer);
    await this.draining;
    await this.listening?.close();
  }

  /** Re-syncs every project that has, or had, something to fire; a failure is logged and left to the next full re-sync. */
  async syncAll(): Promise<void> {
    try {
      await this.queue(await this.projectsWithSchedules());
    } catch (err) {
      this.logger.error({ err }, 'full cron schedule re-sync failed');
    }
  }

  private async projectsWithSchedules(): Promise<string[]> {
    const { rows } = await this.db.raw<{ rows: { project_id: string }[] }>(
      'SELECT project_id FROM schedule_registrations UNION SELECT project_id FROM schedules WHERE enabled',
    );
    const fromManifests = await this.manifests.projectsWithCronTriggers();
    return [...new Set([...rows.map((r) => r.project_id), ...fromManifests])];
  }

  /** Re-syncs these projects soon, one at a time; resolves when the queue is empty. */
  queue(projectIds: string[]): Promise<void> {
    for (const id of projectIds) this.queued.add(id);
    // drain() awaits before it can end whenever there is work, so it is never done before it is stored.
    if (!this.draining && this.queued.size > 0 && !this.stopped) this.draining = this.drain();
    return this.draining ?? Promise.resolve();
  }

  private async drain(): Promise<void> {
    try {
      while (this.queued.size > 0 && !this.stopped) {
        const [projectId] = this.queued;
        this.queued.delete(projectId);
        await this.sync(projectId).catch((err) => this.logger.error({ err, projectId }, 'cron schedule re-sync failed; the next full re-sync retries'));
      }
    } finally {
      // In the same turn as the last check of the queue, so nothing queued meanwhile is left behind.
      this.draining = null;
    }
  }

  /** What should fire for the project: key → cron expression. */
  private async desired(projectId: string, trx: Db): Promise<Map<string, string>> {
    const project = await this.projects.byId(projectId, trx);
    if (!project || project.deleted) return new Map();
    const manifest = await this.manifests.current(projectId);
    const out = new Map([...(manifest ? cronTriggers(projectId, manifest.parsed) : new Map())].map(([key, t]) => [key, t.schedule as string]));
    for (const s of await trx('schedules').where({ project_id: projectId, enabled: true }).select('id', 'cron')) out.set(scheduleKey(s.id), s.cron);
    return out;
  }

  async sync(projectId: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`svc.cron:${projectId}`]);
      const desired = await this.desired(projectId, trx);
      const registered = new Map<string, string>(
        (await trx('schedule_registrations').where({ project_id: projectId })).map((r: { key: string; expression: string }) => [r.key, r.expression]),
      );
      for (const key of registered.keys()) {
        if (desired.has(key)) continue;
        await this.scheduler.cancel(CRON_JOB, { key });
        await trx('schedule_registrations').where({ key }).delete();
      }
      for (const [key, expression] of desired) {
        if (registered.get(key) === expression) continue;
        await this.scheduler.cron(expression, CRON_JOB, { key, project_id: projectId }, key);
        await trx('schedule_registrations').insert({ key, project_id: projectId, expression }).onConflict('key').merge(['expression', 'registered_at']);
      }
    });
  }

  /** One tick of a schedule: emits its event, unless what it belonged to is gone (then the project is re-synced). */
  readonly fire = async (data: Record<string, unknown>): Promise<void> => {
    const key = String(data.key);
    const projectId = String(data.project_id);
    const event = await this.eventFor(key, projectId);
    if (!event) {
      void this.queue([projectId]);
      return;
    }
    await this.db.transaction(async (trx) => {
      const { created } = await emitEvent(trx, { ...event, dedupe_key: `cron:${key}:${cronTick(new Date())}` });
      if (created && key.startsWith('schedule:'))
        await trx('schedules')
          .where({ id: key.slice('schedule:'.length) })
          .update({ last_fired_at: trx.fn.now() });
    });
  };

  private async eventFor(key: string, projectId: string): Promise<NewEvent | null> {
    const project = await this.projects.byId(projectId);
    if (!project || project.deleted) return null;
    if (key.startsWith('schedule:')) {
      const s = await this.db('schedules')
        .where({ id: key.slice('schedule:'.length), project_id: projectId, enabled: true })
        .first();
      if (!s) return null;
      return {
        project_id: projectId,
        type: s.event_type,
        source: 'cron',
        actor_type: 'user',
        actor_id: s.created_by,
        payload: { ...s.payload, schedule: s.cron, schedule_id: s.id },
      };
    }
    const manifest = await this.manifests.current(projectId);
    const trigger = manifest ? cronTriggers(projectId, manifest.parsed).get(key) : undefined;
    if (!trigger) return null;
    return {
      project_id: projectId,
      type: 'cron.tick',
      source: 'cron',
      actor_type: 'system',
      payload: { schedule: trigger.schedule, trigger_name: trigger.name, trigger_kind: trigger.kind },
    };
  }
}
