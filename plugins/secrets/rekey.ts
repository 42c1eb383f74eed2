import type { Knex } from 'knex';
import type { Sealer } from '../../core/crypto/sealer.ts';
import type { SealedColumn } from '../../core/crypto/sealed-columns.ts';
import { ownerOf, type SecretRow } from './repository.ts';
import { secretContext } from './sealing.ts';

/** The secrets' values. The other owners declare theirs (core/auth/signing-keys.ts, plugins/webhooks/repository.ts). */
export const SECRET_SEALS: SealedColumn = {
  table: 'secrets',
  key: 'id',
  column: 'value_enc',
  context: (r) => secretContext(ownerOf(r as unknown as SecretRow), r.name as string),
};

export interface RekeyReport {
  table: string;
  column: string;
  rekeyed: number;
  /** Already sealed with the new key (a value written by a replica that had it): left as is. */
  unchanged: number;
}

/**
 * Re-seals every value of the columns from `from` to `to` in one transaction, with the tables
 * locked against writes: either all values move to the new key or none do. A value that opens
 * with neither key aborts the whole run, naming its row (never its content).
 */
export async function rekey(db: Knex, from: Sealer, to: Sealer, columns: SealedColumn[]): Promise<RekeyReport[]> {
  return db.transaction(async (trx) => {
    const present = [];
    for (const sealed of columns) if (await trx.schema.hasTable(sealed.table)) present.push(sealed);
    if (present.length) await trx.raw(`LOCK TABLE ${present.map((s) => s.table).join(', ')} IN EXCLUSIVE MODE`);
    const reports: RekeyReport[] = [];
    for (const sealed of present) reports.push(await rekeyColumn(trx, sealed, from, to));
    return reports;
  });
}

async function rekeyColumn(trx: Knex.Transaction, sealed: SealedColumn, from: Sealer, to: Sealer): Promise<RekeyReport> {
  const report: RekeyReport = { table: sealed.table, column: sealed.column, rekeyed: 0, unchanged: 0 };
  const rows: Record<string, unknown>[] = await trx(sealed.table).select('*').orderBy(sealed.key);
  for (const row of rows) {
    const context = sealed.context(row);
    const value = row[sealed.column] as string;
    let plain: string;
    try {
      plain = from.open(value, context);
    } catch {
      if (opens(to, value, context)) {
        report.unchanged++;
        continue;
      }
      throw new Error(`${sealed.table} ${sealed.key}=${row[sealed.key]}: the value opens with neither the old nor the new key`);
    }
    await trx(sealed.table)
      .where(sealed.key, row[sealed.key] as string)
      .update({ [sealed.column]: to.seal(plain, context) });
    report.rekeyed++;
  }
  return report;
}

function opens(sealer: Sealer, value: string, context: string): boolean {
  try {
    sealer.open(value, context);
    return true;
  } catch {
    return false;
  }
}
