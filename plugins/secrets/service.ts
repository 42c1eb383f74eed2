import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Sealer } from '../../core/crypto/sealer.ts';
import type { ListQuery } from '../../core/http/lists.ts';
import { isUniqueViolation } from '../../core/http/unique.ts';
import { Conflict, Invalid } from '../../core/errors.ts';
import { INTEGRATION_SECRETS } from '../../core/secrets/platform.ts';
import { SecretRepository, toSecret, type Secret } from './repository.ts';
import type { SecretType } from './schemas.ts';
import { secretContext, type SecretOwner } from './sealing.ts';

export interface SecretInput {
  name: string;
  value: string;
  type: SecretType;
  /** System secrets only (their routes' schema): resolves into jobs of every org. */
  shared_with_jobs?: boolean;
}

export interface SecretReplacement {
  /** Only a system secret's replacement may omit it (to change `shared_with_jobs` alone). */
  value?: string;
  type?: SecretType;
  shared_with_jobs?: boolean;
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
    const shared = sharing(owner, input.name, input.shared_with_jobs);
    try {
      const row = await this.secrets.insert(owner, {
        name: input.name,
        type: input.type,
        value_enc: this.sealer.seal(input.value, secretContext(owner, input.name)),
        ...shared,
      });
      return toSecret(row);
    } catch (e) {
      if (isUniqueViolation(e, 'secrets_name_unique')) {
        throw Boom.conflict(`secret ${input.name} already exists in ${where(owner)}; replace it with PUT`);
      }
      throw e;
    }
  }

  /**
   * Find or create by name: one there whose every field but the value (write-only: never compared,
   * never changed here) matches is answered as it is; none is created; otherwise 409 naming what
   * differs. A concurrent ensure that created it first is compared like any other.
   */
  async ensure(owner: SecretOwner, input: SecretInput): Promise<Secret> {
    let existing = await this.secrets.byName(owner, input.name);
    if (!existing) {
      try {
        return await this.create(owner, input);
      } catch (e) {
        existing = Boom.isBoom(e) && e.output.statusCode === 409 ? await this.secrets.byName(owner, input.name) : undefined;
        if (!existing) throw e;
      }
    }
    const differing = [
      ...(existing.type !== input.type ? ['type'] : []),
      ...(owner.scope === 'system' && existing.shared_with_jobs !== (input.shared_with_jobs ?? false) ? ['shared_with_jobs'] : []),
    ];
    if (differing.length > 0) {
      throw new Conflict(`secret ${input.name} exists in ${where(owner)} with other ${differing.join(', ')}`, { fields: differing });
    }
    return toSecret(existing);
  }

  async replace(owner: SecretOwner, name: string, input: SecretReplacement): Promise<Secret> {
    const shared = sharing(owner, name, input.shared_with_jobs);
    const value_enc = input.value === undefined ? undefined : this.sealer.seal(input.value, secretContext(owner, name));
    const row = await this.secrets.replace(owner, name, {
      ...(value_enc === undefined ? {} : { value_enc }),
      ...(input.type ? { type: input.type } : {}),
      ...shared,
    });
    if (!row) throw notFound(owner, name, '; create it with POST');
    return toSecret(row);
  }

  async remove(owner: SecretOwner, name: string): Promise<void> {
    if (!(await this.secrets.remove(owner, name))) throw notFound(owner, name);
  }
}

/**
 * The `shared_with_jobs` column to write, if the request set it: a system secret's only, and never
 * true for one of svc's own integration secrets (422 naming the field).
 */
function sharing(owner: SecretOwner, name: string, shared: boolean | undefined): { shared_with_jobs?: boolean } {
  if (shared === undefined) return {};
  if (owner.scope !== 'system') throw new Invalid(`shared_with_jobs: only system secrets carry it; ${owner.scope} secrets reach their own jobs`);
  const use = INTEGRATION_SECRETS.get(name);
  if (shared && use) throw new Invalid(`shared_with_jobs: ${name} is one of svc's own integration secrets (${use}) and can never be shared with jobs`);
  return { shared_with_jobs: shared };
}

const notFound = (owner: SecretOwner, name: string, hint = '') => Boom.notFound(`secret ${name} not found in ${where(owner)}${hint}`);
