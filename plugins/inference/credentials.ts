import { SecretMissing, SecretNotShared } from '../../core/errors.ts';
import Boom from '@hapi/boom';
import type { SecretResolver } from '../../core/ports/secrets.ts';

/**
 * Credential values by secret name, for a target of an org (org, then system secrets) or of the
 * system (system secrets). Null when no secret is named.
 *
 * `use` says where the value goes. `server`: svc calls a system-owned target (or a configured
 * provider) itself, the value never leaving the server: every system secret serves. `tenant`: the
 * value goes to a job (a harness pointed at the target directly) or to a base URL an org chose (its
 * own target): a system secret serves only when shared with jobs (docs/security.md).
 */
export class Credentials {
  /** The secrets port, when the secrets plugin is loaded (it registers after this one). */
  constructor(private readonly secrets: () => SecretResolver | null) {}

  async value(secret: string | null, orgId: string | null, owner: string, use: 'server' | 'tenant'): Promise<string | null> {
    if (!secret) return null;
    if (!this.secrets()) throw Boom.badData(`${owner} names credential secret ${secret}, but the secrets plugin is not loaded`);
    try {
      return await this.secrets()!.resolve(secret, { ...(orgId ? { orgId } : {}), ...(use === 'server' ? { internal: true } : {}) });
    } catch (e) {
      if (e instanceof SecretNotShared) throw Boom.badData(`${owner} cannot be used here: its credential ${e.message}`);
      if (e instanceof SecretMissing)
        throw Boom.badData(`${owner} cannot be used: its credential secret ${secret} is not set (${orgId ? `org ${orgId} or system` : 'system'} secrets)`);
      throw e;
    }
  }
}
