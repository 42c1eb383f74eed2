import type { DomainPlugin } from '../../core/http/plugins.ts';
import { Housekeeping } from '../../core/roles.ts';
import { assetRoutes } from './assets.ts';
import { LoginLinkRepository } from './login-link-repository.ts';
import { consoleRoutes } from './routes.ts';
import { sessionProbeRoutes } from './session-probe.ts';
import { ConsoleSessions } from './sessions.ts';
import { describeTags } from '../../core/http/openapi.ts';

/** The web console: its built page and bundles at `/` and `/console/…`, and its sign-in (session cookie, login links). */
export const plugin: DomainPlugin = {
  name: 'console',
  dependencies: ['auth'],
  register(server, { container }) {
    describeTags(server, { console: "The web console's sign-in: one-time login links and the session cookie." });
    for (const cls of [LoginLinkRepository, ConsoleSessions]) container.registerSingleton(cls as never);
    const sessions = container.resolve(ConsoleSessions);
    container.resolve(Housekeeping).add(async () => {
      await sessions.expireLinks();
    });
    server.route([...assetRoutes(), ...consoleRoutes(container), ...sessionProbeRoutes(container)]);
  },
};
