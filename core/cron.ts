import { CronExpressionParser } from 'cron-parser';

/**
 * What is wrong with a cron expression, or null when it is a standard 5-field one (minute hour
 * day-of-month month day-of-week, read in UTC). The first three fields must be numeric, as the
 * scheduler adapter requires, so a human interval such as "1 hour" never passes.
 */
export function cronProblem(expression: string): string | null {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) return `'${expression}' is not a standard 5-field cron expression (minute hour day-of-month month day-of-week)`;
  if (!fields.slice(0, 3).every((f) => /^[\d*,/-]+$/.test(f)))
    return `'${expression}': minute, hour and day-of-month take numbers, ranges, lists and steps only`;
  try {
    CronExpressionParser.parse(expression, { tz: 'UTC' });
    return null;
  } catch (err) {
    return `'${expression}' is not a valid cron expression: ${(err as Error).message}`;
  }
}

/** The minute a cron run belongs to (cron has minute resolution), as an ISO timestamp: the run's identity across replicas. */
export function cronTick(at: Date): string {
  const minute = new Date(at);
  minute.setUTCSeconds(0, 0);
  return minute.toISOString();
}
