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
 * descending), with the total counted by a window function in the same statement; an empty page
 * past the end counts apart. `tiebreak` names a column of `table` that is unique within the
 * query's rows (`id` by default; membership tables have none and pass `user_id`).
 */
export async function paginate<Row, T>(
  query: Knex.QueryBuilder,
  { limit, offset }: Pick<ListQuery, 'limit' | 'offset'>,
  toItem: (row: Row) => T,
  table: string,
  tiebreak = 'id',
): Promise<Page<T>> {
  const rows = await query
    .clone()
    .select(`${table}.*`, query.client.raw('count(*) OVER () AS _total'))
    .orderBy([
      { column: `${table}.created_at`, order: 'desc' },
      { column: `${table}.${tiebreak}`, order: 'desc' },
    ])
    .limit(limit)
    .offset(offset);
  const total =
    rows.length > 0 ? Number(rows[0]._total) : offset > 0 ? Number((await query.clone().clearSelect().clearOrder().count({ n: '*' }).first()).n) : 0;
  return {
    data: rows.map((r: Row & { _total?: unknown }) => {
      delete r._total;
      return toItem(r);
    }),
    pagination: { limit, offset, count: rows.length, total, has_more: offset + rows.length < total },
  };
}
