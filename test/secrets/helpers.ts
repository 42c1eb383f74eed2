import type { ExecutionContext } from 'ava';
import { call, type Reply } from '../support/server.ts';
import type { Ctx } from '../orgs/helpers.ts';

export const SECRET_FIELDS = ['created_at', 'name', 'scope', 'type', 'updated_at'];

/** `as()` has no PUT; secrets need it. */
export const put = (ctx: Ctx, url: string, payload: unknown, token = ctx.adminToken): Promise<Reply> => call(ctx.srv.server, 'PUT', url, payload, token);

/** A value no other test uses, long enough to be masked and easy to find in any text. */
let n = 0;
export const secretValue = (label: string): string => `s3cr3t-${label}-${process.pid}-${++n}-value`;

/** Asserts that none of `values` occurs in the raw JSON text of any reply. */
export function assertNoValues(t: ExecutionContext, replies: Reply[], values: string[]): void {
  for (const reply of replies) {
    const raw = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    for (const value of values) t.false(raw?.includes(value) ?? false, `a secret value leaked into a ${reply.statusCode} reply`);
  }
}
