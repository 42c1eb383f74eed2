import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { Sealer } from '../../core/crypto/sealer.ts';
import { Invalid, SecretMissing, SecretNotShared } from '../../core/errors.ts';
import { isIntegrationSecret } from '../../core/secrets/platform.ts';
import type { SecretContext, SecretResolver as SecretResolverPort } from '../../core/ports/secrets.ts';
import { SecretRepository, ownerOf, type SecretRow } from './repository.ts';
import { SECRET_NAME } from './schemas.ts';
import { secretContext, type SecretOwner } from './sealing.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';

/** `${secret.NAME}`; anything between the braces is captured so a malformed name is reported, not left in place. */
const EXPRESSION = /\$\{secret\.([^}]*)\}/g;

const describe = (owner: SecretOwner) => (owner.scope === 'system' ? 'system' : `${owner.scope} ${owner.id}`);

/**
 * Secret values for a job: the first of project, user, org, system that holds the name. A system
 * secret counts for a job only when it is marked shared_with_jobs and is not one of svc's own
 * integration secrets; svc's own server-side uses (`ctx.internal`) see every system secret.
 */
@injectable()
export class SecretResolver implements SecretResolverPort {
  /**
   * Values already opened, per row as the repository's memo holds it: a row read again (a change,
   * or the memo's age limit) is a new object and is opened anew, so a rotated value is never served
   * stale, and a value lives here no longer than its row does in the memo. Saves an AES-GCM open per
   * call on hot paths (the inference gateway resolves its target's key on every call).
   */
  private readonly opened = new WeakMap<SecretRow, string>();

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(SecretRepository) private readonly secrets: SecretRepository,
    @inject(Tokens.Sealer) private readonly sealer: Sealer,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  async resolve(name: string, ctx: SecretContext): Promise<string> {
    return (await this.resolveAll([name], ctx)).get(name)!;
  }

  async expand(text: string, ctx: SecretContext): Promise<string> {
    return (await this.expandWithValues(text, ctx)).text;
  }

  async expandWithValues(text: string, ctx: SecretContext): Promise<{ text: string; values: string[] }> {
    const names = [...new Set([...text.matchAll(EXPRESSION)].map((m) => m[1]))];
    if (!names.length) return { text, values: [] };
    const bad = names.find((n) => !SECRET_NAME.test(n));
    if (bad !== undefined) throw new Invalid(`\${secret.${bad}} is not a valid secret expression: names are upper-case letters, digits and underscores`);
    const values = await this.resolveAll(names, ctx);
    return { text: text.replace(EXPRESSION, (_, name: string) => values.get(name)!), values: [...values.values()] };
  }

  /**
   * Values by name, all found or SecretMissing (422) naming the first missing one and every scope
   * searched; SecretNotShared when, for a job, only a system secret not shared with jobs holds it.
   */
  async resolveAll(names: string[], ctx: SecretContext): Promise<Map<string, string>> {
    const owners = await this.searchOrder(ctx);
    const found = await this.secrets.find(names, owners);
    const rows = ctx.internal ? found : found.filter(reachesJobs);
    const rank = (o: SecretOwner) => owners.findIndex((x) => x.scope === o.scope && x.id === o.id);
    const values = new Map<string, string>();
    for (const name of names) {
      const row = rows.filter((r) => r.name === name).sort((a, b) => rank(ownerOf(a)) - rank(ownerOf(b)))[0];
      if (!row && found.some((r) => r.name === name)) throw new SecretNotShared(name, owners.map(describe), isIntegrationSecret(name));
      if (!row) throw new SecretMissing(name, owners.map(describe));
      values.set(name, this.open(row));
    }
    return values;
  }

  private open(row: SecretRow): string {
    let value = this.opened.get(row);
    if (value === undefined) {
      value = this.sealer.open(row.value_enc, secretContext(ownerOf(row), row.name));
      this.opened.set(row, value);
    }
    return value;
  }

  /** The org is the project's own: a job cannot name another org to reach its secrets. */
  private async searchOrder(ctx: SecretContext): Promise<SecretOwner[]> {
    let orgId = ctx.orgId ?? null;
    if (ctx.projectId) {
      const project = await this.projects.byId(ctx.projectId);
      if (!project) throw new Invalid(`project ${ctx.projectId} not found`);
      if (orgId && orgId !== project.org_id) throw new Invalid(`project ${ctx.projectId} is not in org ${orgId}`);
      orgId = project.org_id;
    }
    const owners: SecretOwner[] = [];
    if (ctx.projectId) owners.push({ scope: 'project', id: ctx.projectId });
    if (ctx.userId) owners.push({ scope: 'user', id: ctx.userId });
    if (orgId) owners.push({ scope: 'org', id: orgId });
    owners.push({ scope: 'system', id: null });
    return owners;
  }
}

/** Whether a job may be handed the row's value: any of its own scopes', a system one only when shared (never svc's own). */
const reachesJobs = (row: SecretRow): boolean => row.scope !== 'system' || (row.shared_with_jobs && !isIntegrationSecret(row.name));
