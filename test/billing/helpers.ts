import type { Db } from '../../core/db/knex.ts';
import { EnvironmentSuspensionToken, type EnvironmentSuspension } from '../../core/ports/environments.ts';
import { as } from '../support/server.ts';
import { claimWorld, type World } from '../jobs/claim-helpers.ts';

/** A fake environments domain at the suspension seam: records every call. */
export class FakeSuspension implements EnvironmentSuspension {
  readonly calls: { orgId: string; reason: string }[] = [];
  async suspendOrg(orgId: string, reason: string, _trx: Db): Promise<number> {
    this.calls.push({ orgId, reason });
    return 2;
  }
}

export interface BillingWorld extends World {
  admin: ReturnType<typeof as>;
  orgA: string;
  suspension: FakeSuspension;
}

/** The jobs world (org A of an owner, org B of an outsider), the system admin, and a fake suspension seam. */
export async function billingWorld(name: string): Promise<BillingWorld> {
  const suspension = new FakeSuspension();
  const w = await claimWorld(name, { configure: (c) => c.registerInstance(EnvironmentSuspensionToken, suspension) });
  const { org_id } = await w.db('projects').where({ id: w.projectA }).first('org_id');
  return { ...w, admin: as(w.ctx.srv.server, w.ctx.adminToken), orgA: org_id, suspension };
}

/** Posts a rate card as the system admin and insists on 201. */
export async function postCard(w: BillingWorld, body: Record<string, unknown>): Promise<any> {
  const res = await w.admin.post('/admin/pricing/rate-cards', { name: 'test card', provenance: 'test prices', compute: {}, ...body });
  if (res.statusCode !== 201) throw new Error(`card: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function postRate(w: BillingWorld, currency: string, rate: number, effectiveAt?: Date): Promise<any> {
  const res = await w.admin.post('/admin/pricing/exchange-rates', { currency, rate_to_usd: rate, ...(effectiveAt ? { effective_at: effectiveAt } : {}) });
  if (res.statusCode !== 201) throw new Error(`rate: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}
