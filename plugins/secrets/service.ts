import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Sealer } from '../../core/crypto/sealer.ts';
import type { ListQuery } from '../../core/http/lists.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import { SecretRepository, toSecret, type Secret } from './repository.ts';
import type { SecretType } from './schemas.ts';
import { secretContext, type SecretOwner } from './sealing.ts';

export interface SecretInput {
  name: string;
  value: string;
  type: SecretType;
}

export interface SecretReplacement {
  value: string;
  type?: SecretType;
}

const where = (owner: SecretOwner) => (owner.scope === 'system' ? 'system scope' : `${owner.scope} ${owner.id}`);

/** Writes seal the value under the owner and name; reads return metadata only. Messages never carry a value. */
@injectable()
export class SecretService {
  constructor(
    @inject(SecretRepository) private readonly secrets: SecretRepository,
    @inject(Tokens.Sealer) private readonly sealer: Sealer,
  ) {}

  list(owner: SecretOwner, query: Pick<ListQuery, 'limit' | 'offset'>) {
    return this.secrets.list(owner, query);
  }

  async get(owner: SecretOwner, name: string): Promise<Secret> {
    const row = await this.secrets.byName(owner, name);
    if (!row) throw notFound(owner, name);
    return toSecret(row);
  }

  async create(owner: SecretOwner, input: SecretInput): Promise<Secret> {
    try {
      const row = await this.secrets.insert(owner, {
        name: input.name,
        type: input.type,
        value_enc: this.sealer.seal(input.value, secretContext(owner, input.name)),
      });
      return toSecret(row);
    } catch (e) {
      if (isUniqueViolation(e, 'secrets_name_unique')) {
        throw Boom.conflict(`secret ${input.name} already exists in ${where(owner)}; replace it with PUT`);
      }
      throw e;
    }
  }

  async replace(owner: SecretOwner, name: string, input: SecretReplacement): Promise<Secret> {
    const value_enc = this.sealer.seal(input.value, secretContext(owner, name));
    const row = await this.secrets.replace(owner, name, input.type ? { type: input.type, value_enc } : { value_enc });
    if (!row) throw notFound(owner, name, '; create it with POST');
    return toSecret(row);
  }

  async remove(owner: SecretOwner, name: string): Promise<void> {
    if (!(await this.secrets.remove(owner, name))) throw notFound(owner, name);
  }
}

const notFound = (owner: SecretOwner, name: string, hint = '') => Boom.notFound(`secret ${name} not found in ${where(owner)}${hint}`);
