import { SecretMissing } from '../../core/errors.ts';
import Boom from '@hapi/boom';
import type { SecretResolver } from '../../core/ports/secrets.ts';

/**
 * Credential values by secret name, for a target of an org (org, then system secrets) or of the
 * system (system secrets). Null when no secret is named. The value never leaves the proxy.
 */
export class Credentials {
  /** The secrets port, when the secrets plugin is loaded (it registers after this one). */
  constructor(private readonly secrets: () => SecretResolver | null) {}

  async value(secret: string | null, orgId: string | null, owner: string): Promise<string | null> {
    if (!secret) return null;
    if (!this.secrets()) throw Boom.badData(`${owner} names credential secret ${secret}, but the secrets plugin is not loaded`);
    try {
      return await this.secrets()!.resolve(secret, orgId ? { orgId } : {});
    } catch (e) {
      if (e instanceof SecretMissing)
        throw Boom.badData(`${owner} cannot be used: its credential secret ${secret} is not set (${orgId ? `org ${orgId} or system` : 'system'} secrets)`);
      throw e;
    }
  }
}
