import { readFileSync } from 'node:fs';
import { parseCommand, requireFlag } from '../args.ts';
import type { Context } from '../config.ts';
import { CliError, UsageError } from '../errors.ts';
import { formatTable, printJson, write } from '../output.ts';

function readKey(file: string, flag: string, parse: (text: string) => Buffer): Buffer {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    return parse(text);
  } catch {
    throw new CliError(`${flag} ${file}: a master key is 32 bytes, written as 64 hex characters or base64`);
  }
}

/**
 * `svc secrets rekey`: talks to PostgreSQL, not the API, because the running servers hold the old
 * key in memory and could not read values moved under a new one. Server code loads only here.
 */
export async function runRekey(ctx: Context, args: string[], usage: string): Promise<number> {
  const options = { 'old-key-file': { type: 'string' }, 'new-key-file': { type: 'string' }, 'database-url': { type: 'string' } } as const;
  const { values } = parseCommand(args, options, usage, { min: 0, max: 0 });
  const oldFile = requireFlag(values['old-key-file'], 'old-key-file', usage);
  const newFile = requireFlag(values['new-key-file'], 'new-key-file', usage);
  const url = values['database-url'] ?? ctx.env.DATABASE_URL;
  if (!url) throw new UsageError('no database: pass --database-url or set DATABASE_URL', usage);

  const { Sealer, parseMasterKey } = await import('../../core/crypto/sealer.ts');
  const oldKey = readKey(oldFile, '--old-key-file', parseMasterKey);
  const newKey = readKey(newFile, '--new-key-file', parseMasterKey);
  if (oldKey.equals(newKey)) throw new CliError('the old and the new key are the same');

  const { default: knex } = await import('knex');
  const { rekey, SECRET_SEALS } = await import('../../plugins/secrets/rekey.ts');
  // Every sealed column, declared by the domain that owns it.
  const { SIGNING_KEY_SEALS } = await import('../../core/auth/signing-keys.ts');
  const { WEBHOOK_SECRET_SEALS } = await import('../../plugins/webhooks/repository.ts');
  const { HARNESS_OAUTH_SEALS } = await import('../../plugins/harnesses/oauth-repository.ts');
  const db = knex({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  try {
    const reports = await rekey(db, new Sealer(oldKey), new Sealer(newKey), [SIGNING_KEY_SEALS, SECRET_SEALS, WEBHOOK_SECRET_SEALS, ...HARNESS_OAUTH_SEALS]);
    if (ctx.json) printJson({ tables: reports });
    else {
      write(formatTable(reports as unknown as Record<string, unknown>[], [{ key: 'table' }, { key: 'column' }, { key: 'rekeyed' }, { key: 'unchanged' }]));
      write('Done. Start every server with the new key (SVC_SECRETS_MASTER_KEY or <data_dir>/master.key).');
    }
    return 0;
  } catch (error) {
    throw new CliError(`rekey failed, nothing was changed: ${(error as Error).message}`);
  } finally {
    await db.destroy();
  }
}
