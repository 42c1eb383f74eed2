import type { DomainPlugin } from '../../core/http/plugins.ts';
import { IntegrationRepository } from './repository.ts';
import { ChatRoutes } from './service.ts';
import { lookupLater, resolveLater } from '../../core/di.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { InboundDeliveries, InboundPullRequests, InboundSecrets } from './inbound.ts';
import { PullRequestFeedbackToken } from '../../core/ports/jobs.ts';
import { chatRouteRoutes } from './routes.ts';
import { inboundRoutes } from './inbound-routes.ts';
import { BindingRepository } from './binding-repository.ts';
import { TeamBindings } from './bindings.ts';
import { bindingRoutes } from './binding-routes.ts';
import { describeTags } from '../../core/http/openapi.ts';

/**
 * Inbound integrations: code-host and chat-app webhooks stored as events on the spine, and the
 * chat routes that say which project a chat team feeds, once the team has bound itself to the org. The adapters (config `adapters.vcshost`,
 * `adapters.chatapp`) are the kernel's; secrets come through the SecretResolver port.
 */
export const plugin: DomainPlugin = {
  name: 'integrations',
  dependencies: ['projects', 'secrets'],
  register(server, { container }) {
    describeTags(server, {
      integrations:
        "Inbound integrations: the code host's and the chat app's signed webhooks (no bearer token), chat teams bound to an org, and the chat routes of a project.",
    });
    container.registerSingleton(IntegrationRepository);
    container.registerSingleton(BindingRepository);
    container.registerSingleton(TeamBindings);
    container.registerSingleton(ChatRoutes);
    container.registerInstance(InboundSecrets, resolveLater(container, SecretResolverToken));
    container.registerInstance(InboundPullRequests, lookupLater(container, PullRequestFeedbackToken));
    server.route([...chatRouteRoutes(container), ...bindingRoutes(container), ...inboundRoutes(container.resolve(InboundDeliveries))]);
  },
};
