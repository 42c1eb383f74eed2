import { timingSafeEqual } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Sealer } from '../../core/crypto/sealer.ts';
import { Conflict } from '../../core/errors.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { SubscriptionRepository, secretContext, toSubscription, type Subscription, type SubscriptionRow } from './repository.ts';
import { WebhookService, type CreateInput, type Scope } from './service.ts';

const sameSet = (a: string[], b: string[]) => a.length === b.length && [...a].sort().every((v, i) => v === [...b].sort()[i]);

/**
 * `POST …/webhooks/ensure`: a subscription is known by its scope (the org, or one project) and its
 * URL. One there with the same events (in any order), filter, enabled state and secret is answered
 * as it is; none is created; otherwise 409 naming what differs.
 */
@injectable()
export class WebhookEnsure {
  constructor(
    @inject(Tokens.Sealer) private readonly sealer: Sealer,
    @inject(SubscriptionRepository) private readonly subscriptions: SubscriptionRepository,
    @inject(WebhookService) private readonly service: WebhookService,
  ) {}

  async ensure(principal: Principal, scope: Scope, input: CreateInput): Promise<{ subscription: Subscription; created: boolean }> {
    const existing = await this.subscriptions.liveAt(scope.orgId, scope.projectId, input.url);
    if (existing.length === 0) return { subscription: await this.service.create(principal, scope, input), created: true };
    const compared = existing.map((row) => ({ row, differing: this.differing(row, input) }));
    const same = compared.find((c) => c.differing.length === 0);
    if (same) return { subscription: toSubscription(same.row), created: false };
    const { row, differing } = compared[0];
    throw new Conflict(`webhook ${row.id} to ${input.url} exists with other ${differing.join(', ')}`, { fields: differing, id: row.id });
  }

  private differing(row: SubscriptionRow, input: CreateInput): string[] {
    const fields: string[] = [];
    if (!sameSet(row.events, input.events)) fields.push('events');
    if (!isDeepStrictEqual(row.filter ?? {}, input.filter ?? {})) fields.push('filter');
    if (row.enabled !== input.enabled) fields.push('enabled');
    const stored = Buffer.from(this.sealer.open(row.secret_enc, secretContext(row.id)));
    const given = Buffer.from(input.secret);
    if (stored.length !== given.length || !timingSafeEqual(stored, given)) fields.push('secret');
    return fields;
  }
}
