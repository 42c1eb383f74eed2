import type { Knex } from 'knex';

/** Org invites (single-use codes, stored hashed) and self-service access requests. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('invites', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('role').notNullable();
    t.text('code_hash').notNullable().unique();
    t.text('email');
    t.text('provider_hint');
    t.text('identity_hint');
    t.text('redirect_url');
    t.jsonb('app');
    t.text('created_by').references('users.id').onDelete('SET NULL');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('accepted_at', { useTz: true });
    t.text('accepted_by').references('users.id').onDelete('SET NULL');
    t.timestamp('revoked_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['org_id', 'created_at']);
  });
  await db.raw(`ALTER TABLE invites ADD CONSTRAINT invites_role_check CHECK (role IN ('owner', 'admin', 'member'))`);
  await db.raw('CREATE INDEX invites_pending_email ON invites (lower(email)) WHERE accepted_at IS NULL AND revoked_at IS NULL');
  await db.raw('CREATE INDEX invites_pending_identity ON invites (identity_hint) WHERE accepted_at IS NULL AND revoked_at IS NULL');

  await db.schema.createTable('access_requests', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('email').notNullable();
    t.text('ssh_public_key');
    t.text('ssh_fingerprint');
    t.text('nostr_pubkey');
    t.text('message');
    t.text('status').notNullable().defaultTo('pending');
    t.text('role');
    t.text('reason');
    t.text('user_id').references('users.id').onDelete('SET NULL');
    t.text('decided_by').references('users.id').onDelete('SET NULL');
    t.timestamp('decided_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.index(['org_id', 'created_at']);
  });
  await db.raw(`ALTER TABLE access_requests ADD CONSTRAINT access_requests_status_check CHECK (status IN ('pending', 'approved', 'rejected'))`);
  await db.raw(`ALTER TABLE access_requests ADD CONSTRAINT access_requests_one_key CHECK ((ssh_public_key IS NULL) <> (nostr_pubkey IS NULL))`);
  // One open request per org and e-mail.
  await db.raw(`CREATE UNIQUE INDEX access_requests_one_pending ON access_requests (org_id, lower(email)) WHERE status = 'pending'`);
  await db.raw(`CREATE INDEX access_requests_nostr ON access_requests (nostr_pubkey) WHERE status = 'approved'`);
}
