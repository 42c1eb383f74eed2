import Joi from 'joi';
import type { Knex } from 'knex';

export const MAX_LIMIT = 100;

export interface ListQuery {
  limit: number;
  offset: number;
  include_deleted: boolean;
}

/** Query parameters every list route takes; routes add their own filters with `.keys()`. */
export const listQuerySchema = Joi.object({
  limit: Joi.number().integer().min(1).max(MAX_LIMIT).default(10).description(`page size, 1 to ${MAX_LIMIT}`),
  offset: Joi.number().integer().min(0).default(0),
  include_deleted: Joi.boolean().default(false).description('include soft-deleted items'),
});

export interface Page<T> {
  data: T[];
  pagination: { limit: number; offset: number; count: number; total: number; has_more: boolean };
}

export const paginationSchema = Joi.object({
  limit: Joi.number().integer().required(),
  offset: Joi.number().integer().required(),
  count: Joi.number().integer().required().description('items in this page'),
  total: Joi.number().integer().required().description('items in all pages'),
  has_more: Joi.boolean().required(),
}).label('Pagination');

export const pageSchema = (item: Joi.Schema, label: string) =>
  Joi.object({
    data: Joi.array().items(item).required(),
    pagination: paginationSchema,
  }).label(label);

/**
 * One page of `query`, newest first (`created_at` then a unique tie-breaker column, both
 * descending), with the total counted in the same statement by a subquery (its own plan: an
 * index-only count where it can be, not a window that fetches every matching row in full first); an
 * empty page past the end counts apart. `tiebreak` names a column of `table` that is unique within
 * the query's rows (`id` by default; membership tables have none and pass `user_id`).
 */
export async function paginate<Row, T>(
  query: Knex.QueryBuilder,
  page: Pick<ListQuery, 'limit' | 'offset'>,
  toItem: (row: Row) => T,
  table: string,
  tiebreak = 'id',
): Promise<Page<T>> {
  const counted = query.clone().clearSelect().clearOrder().select(query.client.raw('1'));
  const rows = await query
    .clone()
    .select(`${table}.*`, query.client.raw('(SELECT count(*) FROM (?) AS matching) AS _total', [counted]))
    .orderBy(newestFirst(table, tiebreak))
    .limit(page.limit)
    .offset(page.offset);
  return pageOf(rows, query, page, toItem);
}

/**
 * `paginate` for a filter an index answers as a set (full text through GIN): the matches' keys and
 * creation times are gathered once, the page is cut from them and only its rows are read, and the
 * total is counted from them. Either of the planner's other ways costs more at some frequency: walking
 * the table newest first tests every row when the words are rare, and joining every match's row
 * before sorting reads thousands of rows when they are common.
 */
export async function paginateMatches<Row, T>(
  query: Knex.QueryBuilder,
  page: Pick<ListQuery, 'limit' | 'offset'>,
  toItem: (row: Row) => T,
  table: string,
  tiebreak = 'id',
): Promise<Page<T>> {
  const db = query.client.queryBuilder.bind(query.client) as () => Knex.QueryBuilder;
  const matches = query.clone().clearSelect().clearOrder().select(`${table}.${tiebreak} AS key`, `${table}.created_at`);
  const pageKeys = db()
    .from('matches')
    .select('key')
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'key', order: 'desc' },
    ]);
  const rows = await db()
    .withMaterialized('matches', matches)
    .from(table)
    .select(`${table}.*`, query.client.raw('(SELECT count(*) FROM matches) AS _total'))
    .whereIn(`${table}.${tiebreak}`, pageKeys.limit(page.limit).offset(page.offset))
    .orderBy(newestFirst(table, tiebreak));
  return pageOf(rows, query, page, toItem);
}

const newestFirst = (table: string, tiebreak: string) => [
  { column: `${table}.created_at`, order: 'desc' as const },
  { column: `${table}.${tiebreak}`, order: 'desc' as const },
];

async function pageOf<Row, T>(
  rows: (Row & { _total?: unknown })[],
  query: Knex.QueryBuilder,
  { limit, offset }: Pick<ListQuery, 'limit' | 'offset'>,
  toItem: (row: Row) => T,
): Promise<Page<T>> {
  const total =
    rows.length > 0 ? Number(rows[0]._total) : offset > 0 ? Number((await query.clone().clearSelect().clearOrder().count({ n: '*' }).first()).n) : 0;
  return {
    data: rows.map((r) => {
      delete r._total;
      return toItem(r);
    }),
    pagination: { limit, offset, count: rows.length, total, has_more: offset + rows.length < total },
  };
}
