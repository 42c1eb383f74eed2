import { MachineTokens } from '../../core/auth/machine-tokens.ts';
import { AttemptControlToken } from '../../core/ports/attempts.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { lookupLater } from '../../core/di.ts';
import type { DomainPlugin } from '../../core/http/plugins.ts';
import { Tokens } from '../../core/tokens.ts';
import { AccessTargets } from '../../core/http/access.ts';
import { AddressGuard, guardOptions } from '../../core/http/address-guard.ts';
import { ManagedModelsToken, ModelCompletionsToken } from '../../core/ports/inference.ts';
import { GatewayCompletions } from './completions.ts';
import { GatewayUsageToken } from '../../core/ports/gateway-usage.ts';
import { InferenceRepository } from './repository.ts';
import { Scopes } from './scopes.ts';
import { TargetService } from './targets.ts';
import { ManagedModelService } from './managed-models.ts';
import { ModelResolver } from './resolution.ts';
import { Credentials } from './credentials.ts';
import { UpstreamClient } from './upstream.ts';
import { ProviderCatalog } from './catalog.ts';
import { ModelList } from './model-list.ts';
import { UsageRecorder } from './usage.ts';
import { GatewayUsageReports } from './usage-reports.ts';
import { InferenceGateway } from './proxy.ts';
import { BudgetGate } from './budget-gate.ts';
import { ManagedModelResolver } from './harness-resolution.ts';
import { inferenceRoutes } from './routes.ts';
import { CALLER_TARGET, callerPointer, proxyRoutes } from './proxy-routes.ts';
import { acceptProviderKeyHeaders, protocolRoutes } from './protocol-routes.ts';
import { describeTags } from '../../core/http/openapi.ts';

/** Providers, inference targets, the managed-model catalog and the model gateway: chat completions, Anthropic messages, OpenAI Responses, Gemini (docs/inference.md). */
export const plugin: DomainPlugin = {
  name: 'inference',
  dependencies: ['orgs', 'projects'],
  register(server, { container }) {
    describeTags(server, {
      inference:
        'The inference gateway: OpenAI chat completions and Responses, Anthropic Messages and Gemini through the configured targets, metered per caller; targets, managed models and providers.',
    });
    const config = container.resolve(Tokens.Config);
    const settings = config.inference;
    // The outbound policy (outbound.*), with inference.allow_* as its older names for org targets.
    const guard = new AddressGuard(guardOptions(config, 'inference'));
    const client = new UpstreamClient(guard);
    const credentials = new Credentials(lookupLater(container, SecretResolverToken));
    if (!container.isRegistered(AddressGuard)) container.registerInstance(AddressGuard, guard);
    for (const cls of [InferenceRepository, Scopes, ModelResolver]) container.registerSingleton(cls as never);
    // Services that need the plugin's own guard are built with it (another plugin's AddressGuard may be registered).
    const repo = container.resolve(InferenceRepository);
    const scopes = container.resolve(Scopes);
    const resolver = container.resolve(ModelResolver);
    const catalog = new ProviderCatalog(settings, client, credentials);
    const attempts = lookupLater(container, AttemptControlToken);
    const usage = new UsageRecorder(repo, container.resolve(MachineTokens), attempts, container.resolve(Tokens.Logger));
    container.registerInstance(TargetService, new TargetService(repo, scopes, guard));
    container.registerSingleton(ManagedModelService);
    container.registerInstance(ProviderCatalog, catalog);
    container.registerInstance(ModelList, new ModelList(repo, catalog, scopes));
    const gateway = new InferenceGateway(settings, resolver, credentials, client, usage, new BudgetGate(attempts));
    container.registerInstance(InferenceGateway, gateway);
    if (!container.isRegistered(ModelCompletionsToken)) container.registerInstance(ModelCompletionsToken, new GatewayCompletions(gateway, scopes));

    const gatewayUrl = () => `${(settings.proxy_url || config.server.public_url || config.worker.api_url || server.info.uri).replace(/\/+$/, '')}/inference`;
    // Billing reads the calls made outside jobs through this port (spend and usage).
    if (!container.isRegistered(GatewayUsageToken)) container.registerInstance(GatewayUsageToken, container.resolve(GatewayUsageReports));
    if (!container.isRegistered(ManagedModelsToken)) container.registerInstance(ManagedModelsToken, new ManagedModelResolver(resolver, gatewayUrl));

    container.resolve(AccessTargets).register(CALLER_TARGET, callerPointer(scopes));
    acceptProviderKeyHeaders(server);
    server.route([...inferenceRoutes(container), ...proxyRoutes(container, settings), ...protocolRoutes(container, settings)]);
    server.ext('onPostStop', () => client.close());
  },
};
