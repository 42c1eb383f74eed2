import type { DomainPlugin } from '../../core/http/plugins.ts';
import { HarnessRegistryToken } from '../../core/ports/harness.ts';
import { Tokens } from '../../core/tokens.ts';
import { lookupLater } from '../../core/di.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { Harnesses } from './registry.ts';
import { harnessRoutes } from './routes.ts';
import { HarnessAuth } from './service.ts';

/** The harness registry (built-ins harness_a … harness_f and configured plugins) and GET /harnesses. */
export const plugin: DomainPlugin = {
  name: 'harnesses',
  async register(server, { container }) {
    const config = container.resolve(Tokens.Config);
    const harnesses = await Harnesses.load(config.harnesses, new HarnessAuth(lookupLater(container, SecretResolverToken)));
    if (!container.isRegistered(HarnessRegistryToken)) container.registerInstance(HarnessRegistryToken, harnesses);
    server.route(harnessRoutes(harnesses));
  },
};
