import type { JWTPayload } from 'jose';
import { inject, injectable } from '../di.ts';
import { Tokens } from '../tokens.ts';
import type { Db } from '../db/knex.ts';
import { Batcher } from '../batcher.ts';
import { AuthCache } from './cache.ts';
import type { Memo } from '../memo.ts';
import { SigningKeys } from './signing-keys.ts';
import { isPermission, type Permission } from './permissions.ts';
import type { Principal } from './principal.ts';

/** A presented token was refused: the message says why (401). */
export class TokenRejected extends Error {}

interface ServiceTokenRow {
  id: string;
  service_account_id: string;
  scope_type: 'org' | 'project';
  scope_id: string;
  permissions: string[];
  revoked_at: Date | null;
}

export interface JobTokenRequest {
  jobId: string;
  attemptId: string;
  projectId: string;
  orgId: string;
  permissions: Permission[];
  ttlSeconds: number;
}

const permissionSet = (names: unknown): Set<Permission> =>
  new Set((Array.isArray(names) ? names : []).filter((p): p is Permission => typeof p === 'string' && isPermission(p)));

/**
 * Tokens for machines: service-account tokens (their row comes from the AuthCache, which forgets it
 * when it is revoked, so a revoked token stops at once) and job tokens (valid while their attempt runs, and never past its
 * timeout; a running attempt is remembered by the AuthCache, which forgets it when the attempt ends).
 */
@injectable()
export class MachineTokens {
  private readonly serviceTokens = new Batcher<string, ServiceTokenRow | undefined>(async (ids) => {
    const rows: ServiceTokenRow[] = await this.db('service_account_tokens').whereRaw('id = ANY(?)', [[...new Set(ids)]]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id));
  });
  private readonly runningAttempts = new Batcher<string, boolean>(async (ids) => {
    const running = new Set<string>(
      await this.db('job_attempts')
        .whereRaw('id::text = ANY(?)', [[...new Set(ids)]])
        .where({ status: 'running' })
        .pluck('id'),
    );
    return ids.map((id) => running.has(id));
  });

  private readonly knownServiceTokens: Memo<ServiceTokenRow>;
  private readonly knownRunning: Memo<true>;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(SigningKeys) private readonly keys: SigningKeys,
    @inject(AuthCache) cache: AuthCache,
  ) {
    this.knownServiceTokens = cache.memo();
    this.knownRunning = cache.runningAttempts;
  }

  /** Signs a token for a stored service-account token row. */
  async signServiceToken(row: ServiceTokenRow & { expires_at: Date }): Promise<string> {
    const ttl = Math.max(1, Math.floor((row.expires_at.getTime() - Date.now()) / 1000));
    const { token } = await this.keys.sign({ typ: 'service_account', tid: row.id }, row.service_account_id, ttl);
    return token;
  }

  /** A token for one attempt of one job, with an explicit permission list; exposed to the job as SVC_JOB_TOKEN. */
  async signJobToken(req: JobTokenRequest): Promise<{ token: string; expiresAt: Date }> {
    const claims = { typ: 'job', attempt_id: req.attemptId, project_id: req.projectId, org_id: req.orgId, permissions: req.permissions };
    return this.keys.sign(claims, req.jobId, req.ttlSeconds);
  }

  /**
   * The live lease of a job token's attempt (null once it has ended), so a server-side service acting
   * for the job (the inference proxy recording usage) writes under the same fence as its worker.
   * The lease token stays on the server: it is never put into the job token.
   */
  async liveLease(job: { id: string; attemptId: string }): Promise<{ jobId: string; attemptId: string; leaseToken: string } | null> {
    const row = await this.db('job_attempts').where({ id: job.attemptId, job_id: job.id, status: 'running' }).first('lease_token');
    return row?.lease_token ? { jobId: job.id, attemptId: job.attemptId, leaseToken: row.lease_token } : null;
  }

  /**
   * Why a job token stopped working: its attempt has ended, and when the platform failed it (a
   * budget reached, say) its error, so the agent holding the token reads why its calls are refused.
   */
  private async attemptEnded(attemptId: string): Promise<string> {
    const row = await this.db('job_attempts').whereRaw('id::text = ?', [attemptId]).first('status', 'error');
    const failed = row?.status === 'failed' && typeof row.error === 'string' && row.error ? ` (failed: ${row.error.slice(0, 500)})` : '';
    return `the attempt of this job token has ended${failed}`;
  }

  async principalFor(payload: JWTPayload): Promise<Principal> {
    const expiresAt = new Date((payload.exp ?? 0) * 1000).toISOString();
    if (payload.typ === 'service_account' && typeof payload.tid === 'string') {
      const tid = payload.tid;
      const row = await this.knownServiceTokens.get(tid, () => this.serviceTokens.submit(tid));
      if (!row || row.service_account_id !== payload.sub) throw new TokenRejected('the service account of this token no longer exists');
      if (row.revoked_at) throw new TokenRejected('token revoked');
      return {
        kind: 'service_account',
        id: row.service_account_id,
        email: null,
        isAdmin: false,
        scope: { type: row.scope_type, id: row.scope_id },
        roleCap: null,
        expiresAt,
        permissions: permissionSet(row.permissions),
      };
    }
    if (
      payload.typ === 'job' &&
      typeof payload.sub === 'string' &&
      typeof payload.attempt_id === 'string' &&
      typeof payload.project_id === 'string' &&
      typeof payload.org_id === 'string'
    ) {
      const attemptId = payload.attempt_id;
      if (!(await this.knownRunning.get(attemptId, async () => (await this.runningAttempts.submit(attemptId)) || undefined)))
        throw new TokenRejected(await this.attemptEnded(attemptId));
      return {
        kind: 'job',
        id: payload.sub,
        email: null,
        isAdmin: false,
        scope: { type: 'project', id: payload.project_id },
        roleCap: null,
        expiresAt,
        permissions: permissionSet(payload.permissions),
        job: { id: payload.sub, attemptId: payload.attempt_id, projectId: payload.project_id, orgId: payload.org_id },
      };
    }
    throw new TokenRejected('invalid token');
  }
}
