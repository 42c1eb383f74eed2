import type { Context } from './config.ts';

/** One table column: which field to show, under which heading, and how. */
export interface Column {
  key: string;
  header?: string;
  format?: (value: unknown, row: Record<string, unknown>) => string;
}

export interface Pagination {
  limit: number;
  offset: number;
  count: number;
  total: number;
  has_more: boolean;
}

export interface ListBody {
  data: Record<string, unknown>[];
  pagination?: Pagination;
}

export const write = (text: string): void => {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
};

export const note = (text: string): void => {
  process.stderr.write(`${text}\n`);
};

/** The API's body exactly as received, pretty-printed with two spaces. */
export function printJson(value: unknown): void {
  write(JSON.stringify(value, null, 2));
}

/** A value as one table cell: `-` for nothing, JSON for objects, no line breaks. */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (typeof value === 'string') return value.replace(/[\r\n\t]+/g, ' ');
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** An aligned table: upper-case headings, two spaces between columns, no trailing spaces. */
export function formatTable(rows: Record<string, unknown>[], columns: Column[]): string {
  const headers = columns.map((c) => c.header ?? c.key.toUpperCase());
  const body = rows.map((row) => columns.map((c) => (c.format ? c.format(row[c.key], row) : cell(row[c.key]))));
  const widths = headers.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((text, i) => (i === cells.length - 1 ? text : text.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(headers), ...body.map(line)].join('\n');
}

/** `key: value` lines with the values aligned. */
export function formatFields(entries: [string, unknown][]): string {
  const width = Math.max(0, ...entries.map(([key]) => key.length + 1));
  return entries.map(([key, value]) => `${`${key}:`.padEnd(width)}  ${cell(value)}`).join('\n');
}

/** A single object: --json prints the body, otherwise its fields (all of them, or `keys` in order). */
export function printObject(ctx: Context, body: unknown, keys?: string[]): void {
  if (ctx.json) return printJson(body);
  const record = (body ?? {}) as Record<string, unknown>;
  const names = keys ?? Object.keys(record);
  write(formatFields(names.map((key) => [key, record[key]])));
}

/** A list response: --json prints the body, otherwise a table plus a note when there are more pages. */
export function printList(ctx: Context, body: ListBody, columns: Column[], noun: string): void {
  if (ctx.json) return printJson(body);
  const rows = body.data ?? [];
  if (rows.length === 0) {
    write(`No ${noun}.`);
  } else {
    write(formatTable(rows, columns));
  }
  const page = body.pagination;
  if (page && rows.length > 0 && (page.has_more || page.offset > 0)) {
    const more = page.has_more ? `; next page: --offset ${page.offset + page.count}` : '';
    note(`Showing ${page.offset + 1}-${page.offset + page.count} of ${page.total} ${noun}${more}`);
  }
}

/** For commands with no body to show (204): a confirmation for people, nothing for --json. */
export function printDone(ctx: Context, message: string): void {
  if (!ctx.json) write(message);
}
