import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { Conflict, NotFound } from '../../core/errors.ts';
import { inject, injectable } from '../../core/di.ts';
import { Tokens, type Clock } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Principal } from '../../core/auth/principal.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import { OrgDirectoryToken, type OrgDirectory } from '../../core/ports/directory.ts';
import { BindingRepository, type BindingRow } from './binding-repository.ts';

/** How long a binding code may be posted after it was issued. */
export const CODE_TTL_MS = 15 * 60_000;
const CODE_PREFIX = 'svcbind-';
/** `bind <code>` anywhere in a message (after a mention of the app, or `/svc`, or alone). */
const BIND_COMMAND = /(?:^|\s)bind\s+(svcbind-[0-9a-f]{32})(?=\s|$)/i;

export interface BindingStatus {
  team_id: string;
  org_id: string;
  status: 'active' | 'pending';
  bound_at: Date | null;
  expires_at: Date | null;
}

export type Redemption = { bound: true } | { bound: false; message: string };

export const NO_BIND = 'the binding code is unknown, expired, already used or not for this team: nothing was bound';
const takenByAnother = (teamId: string) => `chat team ${teamId} is bound to another org; it must unbind it first`;
const notBound = (teamId: string) => `chat team ${teamId} is not bound to this org`;

const hashOf = (code: string): Buffer => createHash('sha256').update(code.toLowerCase()).digest();

/** The binding code a chat message carries, if any. */
export const bindCodeIn = (text: unknown): string | null => (typeof text === 'string' ? (BIND_COMMAND.exec(text)?.[1]?.toLowerCase() ?? null) : null);

/**
 * Which org a chat team belongs to. An org asks for a one-time code for a team; the team binds
 * itself to that org by posting the code in a signed chat event. Until then no project of the org
 * may route the team, and a team bound to one org cannot be bound by another until it unbinds.
 */
@injectable()
export class TeamBindings {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Clock) private readonly clock: Clock,
    @inject(BindingRepository) private readonly repo: BindingRepository,
    @inject(OrgDirectoryToken) private readonly orgs: OrgDirectory,
  ) {}

  /**
   * The team's binding, under the team lock. A binding of a soft-deleted org is released here (with
   * that org's routes of the team), so deleting an org frees its teams for others.
   */
  private async holder(trx: Db, teamId: string): Promise<BindingRow | undefined> {
    await this.repo.lockTeam(trx, teamId);
    const held = await this.repo.binding(teamId, trx);
    if (!held) return undefined;
    const org = await this.orgs.byId(held.org_id, trx);
    if (org && !org.deleted) return held;
    await this.repo.unbind(trx, held.org_id, teamId);
    return undefined;
  }

  /** A fresh code (shown once, stored only as its SHA-256) for the org to post from the team. */
  async requestCode(principal: Principal, orgId: string, teamId: string): Promise<{ code: string; expires_at: Date }> {
    const now = this.clock.now();
    const code = `${CODE_PREFIX}${randomBytes(16).toString('hex')}`;
    const expiresAt = new Date(now.getTime() + CODE_TTL_MS);
    await this.db.transaction(async (trx) => {
      const held = await this.holder(trx, teamId);
      if (held?.org_id === orgId) throw new Conflict(`chat team ${teamId} is already bound to this org`);
      if (held) throw new Conflict(takenByAnother(teamId));
      await this.repo.prune(trx, now);
      await this.repo.insertCode(trx, {
        id: randomUUID(),
        org_id: orgId,
        team_id: teamId,
        code_hash: hashOf(code).toString('hex'),
        expires_at: expiresAt,
        created_by: principal.id,
      });
    });
    return { code, expires_at: expiresAt };
  }

  async status(orgId: string, teamId: string): Promise<BindingStatus> {
    const held = await this.repo.binding(teamId);
    if (held?.org_id === orgId) return { team_id: teamId, org_id: orgId, status: 'active', bound_at: held.bound_at, expires_at: null };
    const pending = held ? undefined : await this.repo.pendingCode(orgId, teamId, this.clock.now());
    if (!pending) throw new NotFound(notBound(teamId));
    return { team_id: teamId, org_id: orgId, status: 'pending', bound_at: null, expires_at: pending.expires_at };
  }

  /** The org's active bindings, newest first (pending codes are not listed: they are read one team at a time). */
  async list(orgId: string, query: Pick<ListQuery, 'limit' | 'offset'>): Promise<Page<BindingStatus>> {
    const page = await this.repo.list(orgId, query);
    return {
      ...page,
      data: page.data.map((b) => ({ team_id: b.team_id, org_id: b.org_id, status: 'active' as const, bound_at: b.bound_at, expires_at: null })),
    };
  }

  async unbind(orgId: string, teamId: string): Promise<void> {
    const removed = await this.db.transaction(async (trx) => {
      await this.repo.lockTeam(trx, teamId);
      return this.repo.unbind(trx, orgId, teamId);
    });
    if (!removed) throw new NotFound(notBound(teamId));
  }

  /**
   * A code posted from `teamId` in a verified chat event (`user`: who posted it). Binds the team to
   * the org that asked for the code when the code is unused, unexpired and was issued for this team.
   * Every code of the team is compared (in constant time, by hash); a code of another team is left
   * as it is.
   */
  async redeem(teamId: string, code: string, user: string): Promise<Redemption> {
    const now = this.clock.now();
    const presented = hashOf(code);
    return this.db.transaction(async (trx) => {
      // The team lock first, as everywhere else (holder() takes it again; it is reentrant).
      await this.repo.lockTeam(trx, teamId);
      let match: Awaited<ReturnType<BindingRepository['unusedCodes']>>[number] | undefined;
      for (const row of await this.repo.unusedCodes(trx, teamId)) {
        if (timingSafeEqual(Buffer.from(row.code_hash, 'hex'), presented)) match = row;
      }
      if (!match || match.expires_at.getTime() <= now.getTime()) return { bound: false, message: NO_BIND };
      const asker = await this.orgs.byId(match.org_id, trx);
      if (!asker || asker.deleted) return { bound: false, message: NO_BIND };
      const held = await this.holder(trx, teamId);
      if (held && held.org_id !== match.org_id) return { bound: false, message: takenByAnother(teamId) };
      await this.repo.markUsed(trx, match.id, now);
      if (!held) await this.repo.bind(trx, { team_id: teamId, org_id: match.org_id, bound_via: 'code', bound_by: user, requested_by: match.created_by }, now);
      return { bound: true };
    });
  }
}
