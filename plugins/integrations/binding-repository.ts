import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';

export interface BindingRow {
  team_id: string;
  org_id: string;
  bound_via: 'code' | 'migration';
  /** The chat user who posted the code (`chatapp:<user id>`); null for bindings the migration made. */
  bound_by: string | null;
  requested_by: string | null;
  bound_at: Date;
}

export interface CodeRow {
  id: string;
  org_id: string;
  team_id: string;
  code_hash: string;
  expires_at: Date;
  used_at: Date | null;
  created_by: string | null;
  created_at: Date;
}

/** SQL of chat team bindings and their one-time codes. */
@injectable()
export class BindingRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  /**
   * Serializes everything that changes who holds a team, or routes it, under a transaction lock on
   * the team (route creation takes the same lock, see IntegrationRepository.lockTeam).
   */
  async lockTeam(trx: Db, teamId: string): Promise<void> {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`chat_team:${teamId}`]);
  }

  binding(teamId: string, db: Db = this.db): Promise<BindingRow | undefined> {
    return db('chat_team_bindings').where({ team_id: teamId }).first();
  }

  /**
   * Binds the team, and removes routes of other orgs for it: left from before bindings existed,
   * they were never agreed to by the team, and would hold its (team, channel) pairs.
   */
  /** The org's active bindings, newest first. */
  async list(orgId: string, { limit, offset }: Pick<ListQuery, 'limit' | 'offset'>): Promise<Page<BindingRow>> {
    const rows = await this.db('chat_team_bindings')
      .where({ org_id: orgId })
      .select('*', this.db.raw('count(*) OVER () AS _total'))
      .orderBy([
        { column: 'bound_at', order: 'desc' },
        { column: 'team_id', order: 'desc' },
      ])
      .limit(limit)
      .offset(offset);
    const total =
      rows.length > 0
        ? Number(rows[0]._total)
        : offset > 0
          ? Number((await this.db('chat_team_bindings').where({ org_id: orgId }).count({ n: '*' }).first())!.n)
          : 0;
    const data = rows.map(({ _total, ...row }: BindingRow & { _total: unknown }) => row);
    return { data, pagination: { limit, offset, count: rows.length, total, has_more: offset + rows.length < total } };
  }

  async bind(trx: Db, row: Omit<BindingRow, 'bound_at'>, at: Date): Promise<void> {
    await trx('chat_team_bindings').insert({ ...row, bound_at: at });
    await trx('chat_routes').where({ team_id: row.team_id }).whereNot({ org_id: row.org_id }).delete();
  }

  /** Removes the org's binding of the team and the org's routes of it; false when the org holds no binding. */
  async unbind(trx: Db, orgId: string, teamId: string): Promise<boolean> {
    const removed = await trx('chat_team_bindings').where({ team_id: teamId, org_id: orgId }).delete();
    if (removed === 0) return false;
    await trx('chat_routes').where({ team_id: teamId, org_id: orgId }).delete();
    await trx('chat_team_binding_codes').where({ team_id: teamId, org_id: orgId }).whereNull('used_at').delete();
    return true;
  }

  async insertCode(trx: Db, row: Omit<CodeRow, 'used_at' | 'created_at'>): Promise<void> {
    await trx('chat_team_binding_codes').insert(row);
  }

  /** Unused codes for the team, locked for the redeeming transaction. */
  unusedCodes(trx: Db, teamId: string): Promise<CodeRow[]> {
    return trx('chat_team_binding_codes').where({ team_id: teamId }).whereNull('used_at').forUpdate();
  }

  async markUsed(trx: Db, id: string, at: Date): Promise<void> {
    await trx('chat_team_binding_codes').where({ id }).update({ used_at: at });
  }

  /** The org's newest unused, unexpired code for the team. */
  pendingCode(orgId: string, teamId: string, now: Date): Promise<CodeRow | undefined> {
    return this.db('chat_team_binding_codes')
      .where({ org_id: orgId, team_id: teamId })
      .whereNull('used_at')
      .andWhere('expires_at', '>', now)
      .orderBy('created_at', 'desc')
      .first();
  }

  /** Expired and used codes older than a day are of no further use. */
  async prune(trx: Db, now: Date): Promise<void> {
    const dayAgo = new Date(now.getTime() - 24 * 3600_000);
    await trx('chat_team_binding_codes').where('expires_at', '<', dayAgo).delete();
  }
}
