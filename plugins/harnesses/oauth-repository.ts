import type { SealedColumn } from '../../core/crypto/sealed-columns.ts';
import type { Db } from '../../core/db/knex.ts';

export interface OAuthTokenRow {
  family: string;
  seed_hash: string;
  access_token_sealed: string;
  refresh_token_sealed: string;
  expires_at: Date;
}

const TABLE = 'harness_oauth_tokens';

/** Both sealed columns of a row open only in that row: the AAD names the column and the row's seed. */
export const oauthSealContext = (column: 'access' | 'refresh', seedHash: string): string => `harness_oauth:${column}:${seedHash}`;

/** Declared for `svc secrets rekey`. */
export const HARNESS_OAUTH_SEALS: SealedColumn[] = [
  { table: TABLE, key: 'seed_hash', column: 'access_token_sealed', context: (r) => oauthSealContext('access', String(r.seed_hash)) },
  { table: TABLE, key: 'seed_hash', column: 'refresh_token_sealed', context: (r) => oauthSealContext('refresh', String(r.seed_hash)) },
];

/** The refreshed tokens of harness OAuth logins, one row per stored refresh token. */
export class OAuthTokenRepository {
  constructor(private readonly db: Db) {}

  find(seedHash: string): Promise<OAuthTokenRow | undefined> {
    return this.db(TABLE).where({ seed_hash: seedHash }).first();
  }

  /**
   * Runs `fn` holding the seed's lock, so one process at a time refreshes a login: a refresh token
   * that rotates is good for one exchange only. `fn` reads and writes through the handle it is given.
   */
  locked<T>(seedHash: string, fn: (tokens: { find(): Promise<OAuthTokenRow | undefined>; save(row: OAuthTokenRow): Promise<void> }) => Promise<T>): Promise<T> {
    return this.db.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`harness_oauth:${seedHash}`]);
      return fn({
        find: () => trx(TABLE).where({ seed_hash: seedHash }).first(),
        save: async (row) => {
          await trx(TABLE)
            .insert({ ...row, refreshed_at: trx.fn.now() })
            .onConflict('seed_hash')
            .merge(['access_token_sealed', 'refresh_token_sealed', 'expires_at', 'refreshed_at']);
        },
      });
    });
  }
}
