import Boom from '@hapi/boom';
import type { Request, Server } from '@hapi/hapi';
import type { Db } from '../db/knex.ts';
import type { Config } from '../config/schema.ts';
import type { Principal } from '../auth/principal.ts';
import { clientAddressOf } from './client-address.ts';

export type RequestLimits = Config['limits']['requests'];

/** What a caller has left, for the RateLimit-* headers (IETF draft-ietf-httpapi-ratelimit-headers). */
export interface LimitState {
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again. */
  reset: number;
}

/** A 429's extra: seconds until one request is allowed again. */
interface Refusal extends LimitState {
  retryAfter: number;
}

/** One caller's tokens leased by this process. */
interface Allotment {
  left: number;
  /** Date.now() after which unspent tokens are forgotten (limits.requests.lease_ms). */
  expires: number;
  /** The bucket's level in PostgreSQL right after the last lease (what other processes may still take). */
  bucket: number;
  /** Tokens the next lease asks for: from `batch` up to maxLease, doubled while a lease lasts under a tenth of lease_ms. */
  size: number;
  /** When the last lease came back. */
  leasedAt: number;
  /** The last lease found the bucket empty. */
  empty: boolean;
  leasing: Promise<number> | null;
}

/** Callers never limited: health checks, and the worker's own dispatch routes (they carry their own token). */
const EXEMPT = /^\/(health|worker\/)/;
/** How many callers' allotments a process keeps before it forgets the expired ones. */
const PRUNE_AT = 10_000;
const DELETE_EVERY_MS = 60_000;

/**
 * Token buckets shared by every api replica through `rate_limit_buckets`: a process leases tokens
 * of a caller's bucket with one UPDATE … RETURNING (the refill computed in SQL on the database's
 * clock) and spends them locally, so the hot path pays a round trip once per lease, not per request.
 * A lease asks for `batch` tokens, and twice as many each time the last one was spent within a
 * tenth of lease_ms, up to a tenth of the burst (maxLease); when half an allotment is spent the next
 * lease starts in the background, so a busy caller's requests do not wait for the database.
 * Leased tokens are taken from the bucket for good: replicas never admit more than the bucket
 * allows, plus what they still hold (under 2 × maxLease each, forgotten after lease_ms). The
 * price is the other way: a caller refused at one replica may have tokens idle at another until
 * lease_ms passes. docs/operations.md "Rate limits and quotas".
 */
export class RequestLimiter {
  private readonly allotments = new Map<string, Allotment>();
  private readonly level: string;
  readonly maxLease: number;

  constructor(
    private readonly db: Db,
    readonly settings: RequestLimits,
  ) {
    // The bucket's level now: refilled since the last lease at per_second, capped at burst.
    this.level = `LEAST(:burst::float8, tokens + :rate::float8 * GREATEST(0, EXTRACT(EPOCH FROM now() - refilled_at)::float8))`;
    this.maxLease = Math.min(1_000_000_000, Math.max(settings.batch, Math.floor(settings.burst / 10)));
  }

  /** Takes one token for `key`: the caller's state when allowed; a 429 Boom (thrown) when not. */
  take(key: string): LimitState | Promise<LimitState> {
    const state = this.spend(key, Date.now());
    return state ?? this.leaseAndSpend(key);
  }

  private spend(key: string, now: number): LimitState | null {
    const a = this.allotments.get(key);
    if (!a) return null;
    if (now > a.expires) a.left = 0;
    if (a.left <= 0) return null;
    a.left -= 1;
    // Half spent: the next lease starts now, in the background.
    if (a.left < a.size / 2 && !a.leasing && !a.empty) this.startLease(key, a).catch(() => {});
    return this.stateOf(a);
  }

  private stateOf(a: Allotment): LimitState {
    const { burst, per_second } = this.settings;
    const remaining = Math.max(0, Math.floor(a.left + a.bucket));
    return { limit: burst, remaining, reset: Math.ceil((burst - remaining) / per_second) };
  }

  /** Concurrent requests of one caller share one lease. */
  private startLease(key: string, a: Allotment): Promise<number> {
    a.leasing ??= this.lease(key, a).finally(() => (a.leasing = null));
    return a.leasing;
  }

  private async leaseAndSpend(key: string): Promise<LimitState> {
    for (;;) {
      let a = this.allotments.get(key);
      if (!a) {
        if (this.allotments.size >= PRUNE_AT) this.prune(Date.now());
        a = { left: 0, expires: 0, bucket: 0, size: this.settings.batch, leasedAt: 0, empty: false, leasing: null };
        this.allotments.set(key, a);
      }
      const taken = await this.startLease(key, a);
      const state = this.spend(key, Date.now());
      if (state) return state;
      if (taken === 0) {
        const { burst, per_second } = this.settings;
        const refusal: Refusal = {
          limit: burst,
          remaining: 0,
          reset: Math.ceil(burst / per_second),
          retryAfter: Math.max(1, Math.ceil((1 - a.bucket) / per_second)),
        };
        throw tooMany(refusal);
      }
      // Others spent this lease first: lease again.
    }
  }

  /** One statement per lease (two for a caller never seen, or seen long ago). Returns the tokens taken. */
  private async lease(key: string, a: Allotment): Promise<number> {
    const { burst, per_second: rate, batch, lease_ms } = this.settings;
    const now = Date.now();
    if (now - a.leasedAt < lease_ms / 10) a.size = Math.min(this.maxLease, a.size * 2);
    else if (now - a.leasedAt > lease_ms / 2) a.size = batch;
    const bindings = { key, burst, rate, size: a.size };
    const update = () =>
      this.db.raw(
        `UPDATE rate_limit_buckets SET taken = LEAST(:size::int, GREATEST(0, floor(${this.level})))::int,
           tokens = ${this.level} - LEAST(:size::int, GREATEST(0, floor(${this.level}))), refilled_at = now()
         WHERE key = :key RETURNING taken, tokens`,
        bindings,
      );
    let rows = (await update()).rows as { taken: number; tokens: number }[];
    if (!rows.length) {
      const first = Math.min(a.size, burst);
      rows = (
        await this.db.raw(`INSERT INTO rate_limit_buckets (key, tokens, taken) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING taken, tokens`, [
          key,
          burst - first,
          first,
        ])
      ).rows;
      if (!rows.length) rows = (await update()).rows;
    }
    const { taken, tokens } = rows[0];
    const at = Date.now();
    a.left = (at > a.expires ? 0 : a.left) + taken;
    a.bucket = Number(tokens);
    a.empty = taken === 0;
    a.leasedAt = at;
    a.expires = at + lease_ms;
    return taken;
  }

  private prune(now: number): void {
    for (const [key, a] of this.allotments) if (now > a.expires && !a.leasing) this.allotments.delete(key);
  }

  /** Rows not leased from for longer than a bucket takes to fill are full buckets: deleting one changes nothing. */
  async deleteIdle(): Promise<void> {
    const seconds = Math.max(3600, (2 * this.settings.burst) / this.settings.per_second);
    await this.db.raw('DELETE FROM rate_limit_buckets WHERE refilled_at < now() - make_interval(secs => ?)', [seconds]);
  }
}

function tooMany(refusal: Refusal): Boom.Boom {
  const err = Boom.tooManyRequests(
    `rate limit exceeded: ${refusal.limit} requests at once, refilled at the configured rate (limits.requests); retry after ${refusal.retryAfter} s`,
  );
  Object.assign(err.output.headers, headersOf(refusal), { 'retry-after': String(refusal.retryAfter) });
  return err;
}

const headersOf = (s: LimitState): Record<string, string> => ({
  'ratelimit-limit': String(s.limit),
  'ratelimit-remaining': String(s.remaining),
  'ratelimit-reset': String(s.reset),
});

/** The bucket a request draws from: its principal, or the client's address when it presents no token. */
export function limitKeyOf(request: Request): string {
  if (request.auth.isAuthenticated && request.auth.credentials) {
    const principal = (request.auth.credentials as { principal?: Principal }).principal;
    if (principal) return `${principal.kind}:${principal.id}`;
  }
  return addressKeyOf(request);
}

/** The bucket of the client's address: behind a trusted proxy, the address it forwarded (core/http/client-address.ts). */
const addressKeyOf = (request: Request): string => `address:${clientAddressOf(request)}`;

/** Refused by the authentication scheme (before onPostAuth, so not counted there). */
function failedAuthentication(request: Request): boolean {
  if (request.app.rateLimit || request.auth.isAuthenticated) return false;
  const response = request.response;
  return Boom.isBoom(response) && (response.output.statusCode === 401 || request.auth.error === response);
}

declare module '@hapi/hapi' {
  interface RequestApplicationState {
    rateLimit?: LimitState;
  }
}

/** The RateLimit-* headers on an answer to a request the limiter admitted (called by the server's one onPreResponse). */
export function addLimitHeaders(request: Request): void {
  const state = request.app.rateLimit;
  if (!state) return;
  const response = request.response;
  if (Boom.isBoom(response)) Object.assign(response.output.headers, headersOf(state));
  else {
    response.header('ratelimit-limit', String(state.limit));
    response.header('ratelimit-remaining', String(state.remaining));
    response.header('ratelimit-reset', String(state.reset));
  }
}

/**
 * One onPostAuth extension for every route (after the principal is known, before validation and the
 * handler): 429 with Retry-After and RateLimit-* when the caller's bucket is empty. The server's
 * onPreResponse adds RateLimit-* to every other answer (addLimitHeaders). A request refused by
 * authentication (401, or the session cookie's 403) never reaches onPostAuth: an onPreResponse
 * extension takes its token from the bucket of its client address instead, and answers 429 in place
 * of the refusal when that bucket is empty, so guessing tokens is limited like any request without
 * one. Spending a leased token is synchronous: only a request that must wait for a lease returns a promise.
 */
export function installRateLimit(server: Server, db: Db, settings: RequestLimits): RequestLimiter | null {
  if (!settings.enabled) return null;
  const limiter = new RequestLimiter(db, settings);
  const admit = (request: Request, key: string): LimitState | Promise<LimitState> => {
    const state = limiter.take(key);
    if (!(state instanceof Promise)) return (request.app.rateLimit = state);
    return state.then((s) => (request.app.rateLimit = s));
  };
  server.ext('onPostAuth', (request, h) => {
    if (EXEMPT.test(request.path)) return h.continue;
    const state = admit(request, limitKeyOf(request));
    return state instanceof Promise ? state.then(() => h.continue) : h.continue;
  });
  server.ext('onPreResponse', (request, h) => {
    if (!failedAuthentication(request) || EXEMPT.test(request.path)) return h.continue;
    const counted = (): symbol => h.continue;
    const refused = (e: unknown) => {
      if (Boom.isBoom(e) && e.output.statusCode === 429) return e;
      throw e;
    };
    try {
      const state = admit(request, addressKeyOf(request));
      return state instanceof Promise ? state.then(counted, refused) : counted();
    } catch (e) {
      return refused(e);
    }
  });
  let timer: NodeJS.Timeout | null = null;
  server.ext('onPostStart', () => {
    timer = setInterval(() => void limiter.deleteIdle().catch((e) => server.log(['warn', 'rate-limit'], e)), DELETE_EVERY_MS);
    timer.unref();
  });
  server.ext('onPreStop', () => {
    if (timer) clearInterval(timer);
  });
  return limiter;
}
