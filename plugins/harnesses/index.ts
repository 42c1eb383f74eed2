import type { DomainPlugin } from '../../core/http/plugins.ts';
import { HarnessRegistryToken, type AuthWhere } from '../../core/ports/harness.ts';
import { RuntimeToken } from '../../core/ports/runtime.ts';
import { Tokens } from '../../core/tokens.ts';
import { lookupLater } from '../../core/di.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { Harnesses } from './registry.ts';
import { harnessRoutes } from './routes.ts';
import { HarnessAuth } from './service.ts';
import { OAuthRefresher } from './oauth.ts';
import { OAuthTokenRepository } from './oauth-repository.ts';
import { Transport } from '../../core/http/guarded-post.ts';
import { outboundGuard } from '../../core/http/address-guard.ts';

/** The harness registry (built-ins harness_a … harness_f and configured plugins), GET /harnesses, and the OAuth logins it keeps fresh. */
export const plugin: DomainPlugin = {
  name: 'harnesses',
  async register(server, { container }) {
    const config = container.resolve(Tokens.Config);
    const tokenEndpoint = new Transport(outboundGuard(config), config.harness_oauth.timeout_ms);
    const oauth = new OAuthRefresher(
      new OAuthTokenRepository(container.resolve(Tokens.Db)),
      container.resolve(Tokens.Sealer),
      (url, body, headers) => tokenEndpoint.post(url, body, headers),
      config.harness_oauth,
    );
    server.events.on('stop', () => tokenEndpoint.close());
    const harnesses = await Harnesses.load(config.harnesses, new HarnessAuth(lookupLater(container, SecretResolverToken), oauth));
    if (!container.isRegistered(HarnessRegistryToken)) container.registerInstance(HarnessRegistryToken, harnesses);
    // With the worker role here, availability is what this process's attempts see: a runtime that
    // runs them in an image finds the CLI there. An api process without it checks its own PATH.
    const commandsIn = container.isRegistered(RuntimeToken, true) ? container.resolve(RuntimeToken).commandsIn : undefined;
    const where: AuthWhere = commandsIn ? { commandsIn } : {};
    server.route(harnessRoutes(harnesses, where));
  },
};
