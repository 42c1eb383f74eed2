import type { DomainPlugin } from '../../core/http/plugins.ts';
import { HarnessRegistryToken } from '../../core/ports/harness.ts';
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
import { describeTags } from '../../core/http/openapi.ts';

/** The harness registry (built-ins harness_a … harness_f and configured plugins), GET /harnesses, and the OAuth logins it keeps fresh. */
export const plugin: DomainPlugin = {
  name: 'harnesses',
  async register(server, { container }) {
    describeTags(server, {
      harnesses:
        'The coding CLIs (harnesses harness_a to harness_f, and plugins) this server can run jobs with: availability, variants, auth status and capabilities.',
    });
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
    server.route(harnessRoutes(harnesses));
  },
};
