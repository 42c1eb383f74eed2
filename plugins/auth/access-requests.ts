import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens, type Clock } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery } from '../../core/http/lists.ts';
import { Users } from './users.ts';
import type { RoleName } from '../../core/auth/permissions.ts';
import { SshKeyError, parsePublicKey } from '../../domain/signatures/ssh.ts';
import { NostrKeys } from './nostr-keys.ts';
import { UserKeys } from './keys.ts';
import type { Actor } from './invites.ts';
import { Memberships } from '../../core/auth/memberships.ts';
import { OrgDirectoryToken, type OrgDirectory } from '../../core/ports/directory.ts';

/** Beyond this many open requests an org takes no more until an admin decides some. */
export const MAX_PENDING_PER_ORG = 200;

export type AccessRequestStatus = 'pending' | 'approved' | 'rejected';

interface AccessRequestRow {
  id: string;
  org_id: string;
  email: string;
  ssh_public_key: string | null;
  ssh_fingerprint: string | null;
  nostr_pubkey: string | null;
  message: string | null;
  status: AccessRequestStatus;
  role: RoleName | null;
  reason: string | null;
  user_id: string | null;
  decided_by: string | null;
  decided_at: Date | null;
  created_at: Date;
}

export interface AccessRequestInput {
  org_id: string;
  email: string;
  ssh_public_key?: string;
  nostr_pubkey?: string;
  message?: string;
}

/** What an admin sees. */
const toRequest = (r: AccessRequestRow) => ({
  id: r.id,
  org_id: r.org_id,
  email: r.email,
  status: r.status,
  key_type: r.ssh_public_key ? ('ssh' as const) : ('nostr' as const),
  ssh_fingerprint: r.ssh_fingerprint,
  nostr_pubkey: r.nostr_pubkey,
  message: r.message,
  role: r.role,
  reason: r.reason,
  user_id: r.user_id,
  decided_by: r.decided_by,
  decided_at: r.decided_at,
  created_at: r.created_at,
});

/** What the (anonymous) requester sees by id. */
const toStatus = (r: AccessRequestRow) => ({
  id: r.id,
  org_id: r.org_id,
  status: r.status,
  reason: r.reason,
  decided_at: r.decided_at,
  created_at: r.created_at,
});

const isUniqueViolation = (e: unknown) => (e as { code?: string }).code === '23505';

/**
 * Self-service access requests: anyone asks to join an org with an e-mail and one public key (SSH,
 * or a 64-hex nostr key); an org admin approves (account, key and membership in one transaction)
 * or rejects with a reason. One open request per org and e-mail.
 */
@injectable()
export class AccessRequests {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Clock) private readonly clock: Clock,
    @inject(Users) private readonly users: Users,
    @inject(UserKeys) private readonly keys: UserKeys,
    @inject(NostrKeys) private readonly nostrKeys: NostrKeys,
    @inject(Memberships) private readonly memberships: Memberships,
    @inject(OrgDirectoryToken) private readonly orgs: OrgDirectory,
  ) {}

  async create(input: AccessRequestInput) {
    let ssh: { line: string; fingerprint: string } | null = null;
    if (input.ssh_public_key) {
      try {
        const key = parsePublicKey(input.ssh_public_key);
        ssh = { line: key.openssh, fingerprint: key.fingerprint };
      } catch (e) {
        if (e instanceof SshKeyError) throw Boom.badRequest(`"ssh_public_key" ${e.message}`);
        throw e;
      }
    }
    const org = await this.orgs.byId(input.org_id);
    if (!org || org.deleted) throw Boom.notFound(`org ${input.org_id} not found`);
    const pending = (await this.db('access_requests').where({ org_id: input.org_id, status: 'pending' }).count({ n: '*' }).first()) as { n: number };
    if (Number(pending.n) >= MAX_PENDING_PER_ORG) throw Boom.tooManyRequests('this org has too many open access requests; try again later');
    try {
      const [row] = await this.db('access_requests')
        .insert({
          id: newId('req'),
          org_id: input.org_id,
          email: input.email,
          ssh_public_key: ssh?.line ?? null,
          ssh_fingerprint: ssh?.fingerprint ?? null,
          nostr_pubkey: input.nostr_pubkey?.toLowerCase() ?? null,
          message: input.message ?? null,
        })
        .returning('*');
      return toRequest(row);
    } catch (e) {
      if (isUniqueViolation(e)) throw Boom.conflict(`an access request for ${input.email} is already pending in this org`);
      throw e;
    }
  }

  async status(id: string) {
    const row: AccessRequestRow | undefined = await this.db('access_requests').where({ id }).first();
    if (!row) throw Boom.notFound(`access request ${id} not found`);
    return toStatus(row);
  }

  list(orgId: string, page: Pick<ListQuery, 'limit' | 'offset'>, status?: AccessRequestStatus) {
    const query = this.db('access_requests')
      .where({ org_id: orgId })
      .modify((q) => {
        if (status) q.where({ status });
      });
    return paginate<AccessRequestRow, ReturnType<typeof toRequest>>(query, page, toRequest, 'access_requests');
  }

  /**
   * Account (found or created by e-mail), key and membership in one transaction: a step that fails
   * (the key belongs to someone else, say) leaves nothing behind. Approving again answers the
   * approved request unchanged; a rejected request cannot be approved (409).
   */
  approve(orgId: string, id: string, role: RoleName, actor: Actor) {
    return this.db.transaction(async (trx) => {
      const row = await this.lock(trx, orgId, id);
      if (row.status === 'approved') return toRequest(row);
      if (row.status === 'rejected') throw Boom.conflict(`access request ${id} was rejected`);
      if (role === 'owner' && actor.role !== 'owner') throw Boom.forbidden('only an owner can grant the owner role');
      const { user } = await this.users.ensure(row.email, null, trx);
      if (row.ssh_public_key) await this.keys.add(user.id, row.ssh_public_key, 'access request', trx, { allowOwnDuplicate: true });
      if (row.nostr_pubkey) await this.nostrKeys.add(user.id, row.nostr_pubkey, 'access request', trx, { allowOwnDuplicate: true });
      await this.memberships.grantAtLeast({ kind: 'org', id: orgId }, user.id, role, trx);
      const [approved] = await trx('access_requests')
        .where({ id })
        .update({ status: 'approved', role, user_id: user.id, decided_by: actor.userId, decided_at: this.clock.now() })
        .returning('*');
      return toRequest(approved);
    });
  }

  /** Rejecting again answers the rejected request unchanged; an approved request is 409. */
  reject(orgId: string, id: string, reason: string, actor: Pick<Actor, 'userId'>) {
    return this.db.transaction(async (trx) => {
      const row = await this.lock(trx, orgId, id);
      if (row.status === 'rejected') return toRequest(row);
      if (row.status === 'approved') throw Boom.conflict(`access request ${id} was already approved; remove the member instead`);
      const [rejected] = await trx('access_requests')
        .where({ id })
        .update({ status: 'rejected', reason, decided_by: actor.userId, decided_at: this.clock.now() })
        .returning('*');
      return toRequest(rejected);
    });
  }

  private async lock(trx: Db, orgId: string, id: string): Promise<AccessRequestRow> {
    const row: AccessRequestRow | undefined = await trx('access_requests').where({ id, org_id: orgId }).forUpdate().first();
    if (!row) throw Boom.notFound(`access request ${id} not found`);
    return row;
  }
}
