/**
 * A column holding values sealed with the master key, and the AAD each row's value was sealed
 * under. The domain that owns the table declares it next to the code that seals the values;
 * `svc secrets rekey` re-seals every declared column in one transaction.
 */
export interface SealedColumn {
  table: string;
  key: string;
  column: string;
  context(row: Record<string, unknown>): string;
}
