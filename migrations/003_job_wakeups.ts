import type { Knex } from 'knex';

/**
 * Wake the claimers when a job may have become claimable: it turns ready, or a job it waited for
 * finishes. NOTIFY is transactional, so listeners hear of it only once the change is committed.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`
    CREATE FUNCTION svc_notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.phase IN ('ready', 'done', 'cancelled') AND (TG_OP = 'INSERT' OR OLD.phase IS DISTINCT FROM NEW.phase OR OLD.defer_until IS DISTINCT FROM NEW.defer_until) THEN
        PERFORM pg_notify('svc_jobs', NEW.project_id);
      END IF;
      RETURN NULL;
    END $$`);
  await db.raw(`CREATE TRIGGER jobs_notify AFTER INSERT OR UPDATE OF phase, defer_until ON jobs FOR EACH ROW EXECUTE FUNCTION svc_notify_jobs()`);
}
