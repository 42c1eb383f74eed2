import type { DomainPlugin } from '../../core/http/plugins.ts';
import { HarnessAvailabilityToken, HarnessRegistryToken, type AuthWhere } from '../../core/ports/harness.ts';
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
import { ManifestReaderToken } from '../../core/ports/manifest.ts';
import { ProjectDirectoryToken } from '../../core/ports/directory.ts';
import { AgentDirectory } from './agents.ts';
import { agentRoutes } from './agent-routes.ts';
import { SharedMemos } from '../../core/db/shared-memos.ts';
import { Housekeeping } from '../../core/roles.ts';
import { HarnessReportRepository } from './reports-repository.ts';
import { HarnessAvailabilityService } from './availability.ts';
import { describeTags } from '../../core/http/openapi.ts';

/**
 * The harness registry (built-ins harness_a … harness_f and configured plugins), GET /harnesses, the
 * agent configuration routes, the OAuth logins it keeps fresh, and what the workers report they can
 * run (HarnessAvailability).
 */
export const plugin: DomainPlugin = {
  name: 'harnesses',
  async register(server, { container }) {
    describeTags(server, {
      harnesses:
        'The coding CLIs (harnesses harness_a to harness_f, and plugins) this server can run jobs with: availability, variants, auth status and capabilities.',
      agents: "A project's or org's agent configuration: the manifest's profiles, what each would run now, and which harnesses are ready in that scope.",
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
    const auth = new HarnessAuth(lookupLater(container, SecretResolverToken), oauth);
    const harnesses = await Harnesses.load(config.harnesses, auth);
    if (!container.isRegistered(HarnessRegistryToken)) container.registerInstance(HarnessRegistryToken, harnesses);
    // What the workers can run, from their reports; job creation asks it (docs/harnesses.md, "Refused at create").
    const db = container.resolve(Tokens.Db);
    const availability = new HarnessAvailabilityService(
      db,
      new HarnessReportRepository(db),
      container.resolve(SharedMemos),
      () => container.resolve(HarnessRegistryToken),
      auth,
    );
    if (!container.isRegistered(HarnessAvailabilityToken)) container.registerInstance(HarnessAvailabilityToken, availability);
    container.resolve(Housekeeping).add(async () => void (await availability.prune()));
    // With the worker role here, availability is what this process's attempts see: a runtime that
    // runs them in an image finds the CLI there. An api process without it checks its own PATH.
    const commandsIn = container.isRegistered(RuntimeToken, true) ? container.resolve(RuntimeToken).commandsIn : undefined;
    const where: AuthWhere = commandsIn ? { commandsIn } : {};
    server.route(harnessRoutes(harnesses, where));
    const agents = new AgentDirectory(
      container.resolve(HarnessRegistryToken),
      lookupLater(container, ManifestReaderToken),
      lookupLater(container, ProjectDirectoryToken),
    );
    server.route(agentRoutes(agents));
  },
};
