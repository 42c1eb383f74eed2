/** Postgres unique_violation, optionally on a named constraint. */
export function isUniqueViolation(e: unknown, constraint?: string): boolean {
  const err = e as { code?: string; constraint?: string };
  return err?.code === '23505' && (!constraint || err.constraint === constraint);
}

/** Names the fields whose requested value differs from the stored one (ensure semantics). */
export function conflictingFields(requested: Record<string, unknown>, stored: Record<string, unknown>): string[] {
  return Object.entries(requested)
    .filter(([, v]) => v !== undefined)
    .filter(([k, v]) => v !== stored[k])
    .map(([k]) => k);
}
