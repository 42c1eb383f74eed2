import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Sealer } from '../../core/crypto/sealer.ts';
import { newId } from '../../core/ids.ts';
import type { Config } from '../../core/config/schema.ts';
import { QuotaExceeded } from '../../core/errors.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { AddressGuard, UrlRefused } from './address-guard.ts';
import { DeliveryRepository, type Delivery } from './deliveries.ts';
import { deliveryHeaders, envelope } from './envelope.ts';
import type { WebhookFilter } from './matching.ts';
import { SubscriptionRepository, secretContext, toSubscription, type Subscription, type SubscriptionRow } from './repository.ts';
import { Transport } from '../../core/http/guarded-post.ts';

export interface CreateInput {
  url: string;
  events: string[];
  filter: WebhookFilter;
  secret: string;
  enabled: boolean;
}

/** Who a subscription belongs to: an org, and for a project-scoped one that project. */
export interface Scope {
  orgId: string;
  projectId: string | null;
}

export const TEST_EVENT_TYPE = 'webhook.test';

/** Subscription rules: creation (address guard, sealed secret), removal, re-enabling, test sends. */
@injectable()
export class WebhookService {
  constructor(
    @inject(Tokens.Sealer) private readonly sealer: Sealer,
    @inject(Tokens.Config) private readonly config: Config,
    @inject(SubscriptionRepository) private readonly subscriptions: SubscriptionRepository,
    @inject(DeliveryRepository) private readonly deliveries: DeliveryRepository,
    @inject(AddressGuard) private readonly guard: AddressGuard,
    @inject(Transport) private readonly transport: Transport,
  ) {}

  async create(principal: Principal, scope: Scope, input: CreateInput): Promise<Subscription> {
    if (scope.projectId !== null) await this.requireLiveProject(scope.projectId);
    await this.checkFilter(scope, input.filter);
    await this.checkUrl(input.url);
    const id = newId('wh');
    const limit = this.config.limits.org.webhooks;
    const inserted = await this.subscriptions.insertWithin(
      {
        id,
        org_id: scope.orgId,
        project_id: scope.projectId,
        url: input.url,
        events: input.events,
        filter: input.filter,
        secret_enc: this.sealer.seal(input.secret, secretContext(id)),
        enabled: input.enabled,
        created_by: principal.id,
      },
      limit,
    );
    if ('count' in inserted)
      throw new QuotaExceeded('invalid', `quota exceeded: org ${scope.orgId} has ${inserted.count} webhooks (limits.org.webhooks ${limit})`);
    return toSubscription(inserted.created);
  }

  async get(orgId: string, id: string): Promise<SubscriptionRow> {
    const row = await this.subscriptions.live(orgId, id);
    if (!row) throw Boom.notFound(`webhook ${id} not found`);
    return row;
  }

  /** Soft-deletes: deliveries stay readable in the database, the subscription answers 404 from now on. */
  async remove(orgId: string, id: string): Promise<void> {
    await this.get(orgId, id);
    await this.subscriptions.softDelete(id);
  }

  /** Turns the subscription on and starts its failure count afresh. */
  async enable(orgId: string, id: string): Promise<Subscription> {
    await this.get(orgId, id);
    return toSubscription(await this.subscriptions.update(id, { enabled: true, consecutive_failures: 0, disabled_at: null, disabled_reason: null }));
  }

  /** Changes the URL (checked by the address policy again), the events, the filter or whether it is enabled. */
  async update(orgId: string, id: string, changes: Partial<Pick<CreateInput, 'url' | 'events' | 'filter' | 'enabled'>>): Promise<Subscription> {
    const row = await this.get(orgId, id);
    if (changes.filter) await this.checkFilter({ orgId: row.org_id, projectId: row.project_id }, changes.filter);
    if (changes.url) await this.checkUrl(changes.url);
    const enabling = changes.enabled === true && !row.enabled ? { consecutive_failures: 0, disabled_at: null, disabled_reason: null } : {};
    const disabling = changes.enabled === false ? { disabled_at: new Date(), disabled_reason: 'disabled by its owner' } : {};
    return toSubscription(await this.subscriptions.update(id, { ...changes, ...enabling, ...disabling }));
  }

  /** Replaces the signing secret: deliveries sent from now on (retries included) are signed with the new one. */
  async rotateSecret(orgId: string, id: string, secret: string): Promise<Subscription> {
    await this.get(orgId, id);
    return toSubscription(await this.subscriptions.update(id, { secret_enc: this.sealer.seal(secret, secretContext(id)) }));
  }

  /**
   * Sends a `webhook.test` event now, whether or not the subscription is enabled, and records it as
   * a delivery of kind test. It is never retried and does not count towards auto-disabling.
   */
  async test(orgId: string, id: string): Promise<Delivery> {
    const sub = await this.get(orgId, id);
    const deliveryId = newId('whd');
    const event = {
      id: newId('evt'),
      type: TEST_EVENT_TYPE,
      org_id: sub.org_id,
      project_id: sub.project_id,
      time: new Date(),
      data: { subscription_id: sub.id, message: 'test delivery from svc' },
    };
    const body = envelope(event);
    const secret = this.sealer.open(sub.secret_enc, secretContext(sub.id));
    const outcome = await this.transport.post(sub.url, body, deliveryHeaders({ deliveryId, messageId: event.id, body, secret, sentAt: new Date() }));
    const row = await this.deliveries.insertFinished({
      id: deliveryId,
      subscription_id: sub.id,
      event_id: event.id,
      event_type: event.type,
      kind: 'test',
      replay_id: null,
      dedupe_key: null,
      status: outcome.ok ? 'succeeded' : 'failed',
      attempts: 1,
      response_status: outcome.status,
      response_body: outcome.body,
      error: outcome.error,
      duration_ms: outcome.durationMs,
    });
    return row;
  }

  private async checkUrl(url: string): Promise<void> {
    try {
      await this.guard.check(new URL(url));
    } catch (err) {
      if (err instanceof UrlRefused) throw Boom.badData(`url refused: ${err.message}`);
      throw err;
    }
  }

  private async requireLiveProject(projectId: string): Promise<void> {
    const project = await this.subscriptions.project(projectId);
    if (!project || project.deleted) throw Boom.badData(`project ${projectId} is deleted`);
  }

  /** A filter naming a project outside the scope would never match: refused rather than stored. */
  private async checkFilter(scope: Scope, filter: WebhookFilter): Promise<void> {
    const wanted = filter.project_id;
    if (wanted === undefined) return;
    if (scope.projectId !== null && wanted !== scope.projectId) {
      throw Boom.badData(`filter.project_id ${wanted} differs from the subscription's project ${scope.projectId}`);
    }
    const project = await this.subscriptions.project(wanted);
    if (project?.org_id !== scope.orgId) throw Boom.badData(`filter.project_id ${wanted} is not a project of org ${scope.orgId}`);
  }
}
