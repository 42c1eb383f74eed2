import Joi from 'joi';

/** The windows analytics and spend report over (the spec's limit), and the default. */
export const REPORT_WINDOWS = ['1d', '7d', '30d', '90d'] as const;
export type ReportWindow = (typeof REPORT_WINDOWS)[number];
export const DEFAULT_WINDOW: ReportWindow = '7d';

export const windowQuery = Joi.object({
  window: Joi.string()
    .valid(...REPORT_WINDOWS)
    .default(DEFAULT_WINDOW)
    .description(`how far back from now: ${REPORT_WINDOWS.join(', ')}`),
});

/** The start of a window ending at `now`. */
export const windowStart = (window: ReportWindow, now: Date): Date => new Date(now.getTime() - Number.parseInt(window, 10) * 86_400_000);

/**
 * How a window splits over daily rollups: whole UTC days from `firstDay` on come from the rollup;
 * the part of the window's first day from `since` to `edge` (that day's end) is counted raw.
 */
export function windowDays(since: Date): { since: Date; edge: Date; edgeDay: string; firstDay: string } {
  const edge = new Date(Date.UTC(since.getUTCFullYear(), since.getUTCMonth(), since.getUTCDate() + 1));
  return { since, edge, edgeDay: since.toISOString().slice(0, 10), firstDay: edge.toISOString().slice(0, 10) };
}
