import type { Knex } from 'knex';

/**
 * An invite may name the invitee's code-host user: the public SSH keys the code host lists for that
 * user, fetched when the invite is made, are registered to whoever accepts it (and let one of them
 * sign in for the first time, as an identity hint does).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('invites', (t) => {
    t.text('code_host_user');
    t.specificType('code_host_keys', 'text[]');
  });
}
