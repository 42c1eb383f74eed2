import { SecretMissing } from '../../core/errors.ts';
import { randomBytes } from 'node:crypto';
import Boom from '@hapi/boom';
import type { Logger } from 'pino';
import { inject, injectable, type InjectionToken } from '../../core/di.ts';
import { Tokens, type Clock } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { emitEvent, type EventSource } from '../../core/events/emit.ts';
import type { SecretResolver } from '../../core/ports/secrets.ts';
import { VcsHostToken, type VcsHost } from '../../core/ports/vcshost.ts';
import { ChatAppToken, type ChatApp } from '../../core/ports/chatapp.ts';
import type { InboundEvent, InboundRequest } from '../../core/ports/integrations.ts';
import { EventLogToken, type EventLog, type LoggedEvent } from '../../core/ports/events.ts';
import type { PullRequestFeedback } from '../../core/ports/jobs.ts';
import { IntegrationRepository } from './repository.ts';
import { TeamBindings, bindCodeIn } from './bindings.ts';

/**
 * Project secret (org and system secrets of the name apply to projects without one) that signs
 * code-host deliveries, and the system secret that signs the chat app's: svc's own integration
 * secrets (core/secrets/platform.ts), read here server-side and never handed to a job.
 */
export { CHATAPP_SIGNING_SECRET, VCSHOST_WEBHOOK_SECRET } from '../../core/secrets/platform.ts';
import { CHATAPP_SIGNING_SECRET, VCSHOST_WEBHOOK_SECRET } from '../../core/secrets/platform.ts';

export interface Outcome {
  status: 200 | 201 | 202;
  body: Record<string, unknown>;
}

/** The secrets plugin registers after this one (config order), so its resolver is looked up per request. */
export const InboundSecrets = Symbol('InboundSecrets') as InjectionToken<() => SecretResolver>;
/** The jobs plugin's pull request feedback, when it is loaded. */
export const InboundPullRequests = Symbol('InboundPullRequests') as InjectionToken<() => PullRequestFeedback | null>;

const ignored = (message: string): Outcome => ({ status: 202, body: { ignored: true, message } });

/**
 * Webhook requests from the code host and the chat app: verified with their secret, read by the
 * configured adapter, and stored on the event spine as pending (the router takes them from there).
 */
@injectable()
export class InboundDeliveries {
  constructor(
    @inject(IntegrationRepository) private readonly repo: IntegrationRepository,
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Clock) private readonly clock: Clock,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(VcsHostToken) private readonly host: VcsHost,
    @inject(ChatAppToken) private readonly app: ChatApp,
    @inject(InboundSecrets) private readonly secrets: () => SecretResolver,
    @inject(EventLogToken) private readonly events: EventLog,
    @inject(TeamBindings) private readonly bindings: TeamBindings,
    @inject(InboundPullRequests) private readonly pullRequests: () => PullRequestFeedback | null,
  ) {}

  async vcshost(projectId: string, request: InboundRequest, requestId: string): Promise<Outcome> {
    const secret = (await this.repo.liveProject(projectId)) ? await this.secret(VCSHOST_WEBHOOK_SECRET, projectId) : null;
    if (!secret) this.logger.info({ projectId }, `vcshost delivery for a project that is unknown, deleted or has no ${VCSHOST_WEBHOOK_SECRET}`);
    // Verified against a random secret when there is none, so the answer does not tell which case it was.
    const verification = this.host.verify(request, secret ?? randomBytes(32).toString('hex'));
    if (!verification.ok) throw Boom.unauthorized(verification.reason);
    const delivery = this.host.normalize(request);
    if (delivery.kind === 'invalid') throw Boom.badRequest(delivery.message);
    if (delivery.kind === 'ignored')
      return ignored(`vcshost event '${delivery.event}' is ignored: only push, pull_request and pull_request_review deliveries are stored`);
    const { outcome, event } = await this.store(projectId, 'vcshost', delivery.event, requestId);
    // A redelivery is observed again: the verdict applies at least once, and a second time changes nothing.
    if (event.type.startsWith('vcshost.pull_request')) await this.pullRequests()?.observe(event);
    return outcome;
  }

  async chat(request: InboundRequest, requestId: string): Promise<Outcome> {
    const secret = await this.secret(CHATAPP_SIGNING_SECRET, null);
    if (!secret)
      throw Boom.notFound(`the chat app integration is not configured on this server: an admin sets the system secret ${CHATAPP_SIGNING_SECRET} to enable it`);
    const verification = this.app.verify(request, secret, this.clock.now());
    if (!verification.ok) throw Boom.unauthorized(verification.reason);
    const delivery = this.app.normalize(request);
    switch (delivery.kind) {
      case 'invalid':
        throw Boom.badRequest(delivery.message);
      case 'url_verification':
        return { status: 200, body: { challenge: delivery.challenge } };
      case 'ignored':
        return ignored(delivery.reason);
    }
    // "bind <code>" from the team: the team agrees to belong to the org that asked for the code. Never stored as an event.
    const code = bindCodeIn(delivery.event.payload.text);
    if (code) {
      const redeemed = await this.bindings.redeem(delivery.team_id, code, delivery.event.actor_id ?? 'chatapp:unknown');
      this.logger.info({ team: delivery.team_id, bound: redeemed.bound }, 'chat team binding code posted');
      if (!redeemed.bound) return ignored(redeemed.message);
      return {
        status: 200,
        body: { bound: true, team_id: delivery.team_id, message: `chat team ${delivery.team_id} is now bound to the org that asked for this code` },
      };
    }
    const projectId = await this.repo.projectFor(delivery.team_id, delivery.channel);
    if (!projectId) {
      this.logger.info({ team: delivery.team_id, channel: delivery.channel }, 'chat event for a team with no route');
      return ignored(
        `no chat route for team ${delivery.team_id}${delivery.channel ? ` channel ${delivery.channel}` : ''}: add one with POST /projects/{project_id}/routes`,
      );
    }
    return (await this.store(projectId, 'chatapp', delivery.event, requestId)).outcome;
  }

  /** 201 with the new event, or 200 with the one an earlier delivery of the same id stored. */
  private async store(projectId: string, source: EventSource, event: InboundEvent, requestId: string): Promise<{ outcome: Outcome; event: LoggedEvent }> {
    const { id, created } = await this.db.transaction((trx) => emitEvent(trx, { ...event, project_id: projectId, source, request_id: requestId }));
    const stored = (await this.events.byId(id))!;
    return { outcome: { status: created ? 201 : 200, body: { ...stored } }, event: stored };
  }

  /** The secret's value, or null when no scope searched holds it. svc verifies with it here; no job sees it (`internal`). */
  private async secret(name: string, projectId: string | null): Promise<string | null> {
    try {
      return await this.secrets().resolve(name, { projectId, internal: true });
    } catch (e) {
      if (e instanceof SecretMissing) return null;
      throw e;
    }
  }
}
