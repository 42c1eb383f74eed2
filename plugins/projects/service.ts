import { Conflict, Invalid } from '../../core/errors.ts';
import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { drawUntilFree, newId } from '../../core/ids.ts';
import { Access } from '../../core/auth/access.ts';
import type { Grant, Principal } from '../../core/auth/principal.ts';
import { conflictingFields, isUniqueViolation } from '../../core/http/unique.ts';
import { projectSlugFrom, varySlug } from '../../core/slugs.ts';
import { ProjectRepository, toProject, type Project, type ProjectRow } from './repository.ts';
import { OrgDirectoryToken, type OrgDirectory } from '../../core/ports/directory.ts';
import type { Config } from '../../core/config/schema.ts';
import { checkRepoUrl, GitAccessError, redactUrl, repoUrlPolicy } from '../../core/git-access.ts';
import { outboundGuard } from '../../core/http/address-guard.ts';
import { repoHostRefusal } from '../../core/git-addresses.ts';

export interface ProjectInput {
  org_id: string;
  name: string;
  slug?: string;
  repo_url?: string | null;
  branch?: string;
  id?: string;
}

export interface ProjectChanges {
  name?: string;
  slug?: string;
  repo_url?: string | null;
  branch?: string;
  deleted?: boolean;
}

const SLUG_ATTEMPTS = 8;

@injectable()
export class ProjectService {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(ProjectRepository) private readonly projects: ProjectRepository,
    @inject(Access) private readonly access: Access,
    @inject(OrgDirectoryToken) private readonly orgs: OrgDirectory,
    @inject(Tokens.Config) private readonly config: Config,
  ) {}

  /**
   * A repo_url this server may clone (core/git-access.ts checkRepoUrl: file:// only where allowed)
   * on a host the outbound address policy lets it reach (a name that does not resolve here passes:
   * every clone, fetch and push checks it again); else 422 naming repo_url.
   */
  private async requireUsableRepoUrl(repoUrl: string | null | undefined): Promise<void> {
    if (!repoUrl) return;
    try {
      checkRepoUrl(repoUrl, repoUrlPolicy(this.config));
    } catch (e) {
      if (e instanceof GitAccessError) throw new Invalid(`repo_url: ${e.message}`);
      throw e;
    }
    const refusal = await repoHostRefusal(repoUrl, outboundGuard(this.config), { acceptUnresolved: true });
    if (refusal !== null) throw new Invalid(`repo_url: ${redactUrl(repoUrl)} is refused: ${refusal}`);
  }

  /**
   * A chosen slug must be free (409); one derived from the name is varied until it is. Inside the
   * caller's transaction `db` each insert runs under a savepoint, so a collision does not abort it.
   */
  async create(input: ProjectInput, db: Db = this.db): Promise<Project> {
    await this.requireUsableRepoUrl(input.repo_url);
    const org = await this.orgs.byId(input.org_id, db);
    if (org?.deleted) throw Boom.badData(`org ${input.org_id} is deleted; restore it before adding projects`);
    let slug = input.slug ?? projectSlugFrom(input.name);
    return drawUntilFree({
      draws: input.slug === undefined ? SLUG_ATTEMPTS + 1 : 1,
      attempt: async (n) => {
        if (n > 0) slug = varySlug(slug, n - 1);
        const insert = (into: Db) => this.projects.insert(this.fields(input, slug), into);
        const row = await (db.isTransaction ? db.transaction(insert) : insert(db)).catch((e) => {
          throw isUniqueViolation(e, 'projects_pkey') ? new Conflict(`project ${input.id} already exists`) : e;
        });
        return toProject(row);
      },
      taken: (e) => isUniqueViolation(e, 'projects_slug_unique'),
      exhausted: () => new Conflict(`project slug '${slug}' is taken`),
    });
  }

  /** Find-or-create by id, else slug, else name within the org; 409 when it exists with other parameters. */
  async ensure(principal: Principal, input: ProjectInput): Promise<Project> {
    if (!input.id && !input.slug) return this.ensureByName(principal, input);
    const found = await this.find(input);
    if (!found) {
      try {
        return await this.create(input);
      } catch (e) {
        // Lost a race to a concurrent ensure: compare against the winner.
        const winner = e instanceof Conflict ? await this.find(input) : undefined;
        if (!winner) throw e;
        return this.compare(principal, input, winner);
      }
    }
    return this.compare(principal, input, found);
  }

  /**
   * No unique constraint backs the (org, name) key and a derived slug is varied on collision, so
   * concurrent ensures by name would each create a project: they serialize on an advisory lock
   * held until the creating transaction commits.
   */
  private async ensureByName(principal: Principal, input: ProjectInput): Promise<Project> {
    const result = await this.db.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?))', ['projects.ensure', `${input.org_id}\n${input.name}`]);
      const found = await this.projects.byName(input.org_id, input.name, trx);
      return found ? { found } : { created: await this.create(input, trx) };
    });
    return result.created ?? this.compare(principal, input, result.found!);
  }

  async get(id: string): Promise<Project> {
    return toProject((await this.projects.byId(id))!);
  }

  async update(grant: Grant, changes: ProjectChanges): Promise<Project> {
    const current = (await this.projects.byId(grant.projectId!))!;
    if (changes.slug !== undefined && changes.slug !== current.slug) throw Boom.badData(`"slug" is immutable (it is '${current.slug}')`);
    if (changes.deleted !== undefined && !grant.permissions.has('projects:delete')) throw Boom.forbidden('missing permission projects:delete');
    if (changes.repo_url !== current.repo_url) await this.requireUsableRepoUrl(changes.repo_url);
    const { slug: _immutable, ...rest } = changes;
    if (!Object.keys(rest).length) return toProject(current);
    return toProject(await this.projects.update(current.id, rest));
  }

  private find(input: ProjectInput): Promise<ProjectRow | undefined> {
    if (input.id) return this.projects.byId(input.id);
    if (input.slug) return this.projects.bySlug(input.slug);
    return this.projects.byName(input.org_id, input.name);
  }

  private async compare(principal: Principal, input: ProjectInput, found: ProjectRow): Promise<Project> {
    if (!(await this.access.grantOn(principal, { project: found.id }))) {
      // Name only what the caller already gave: the key they asked by.
      throw Boom.conflict(input.id ? `project ${input.id} already exists` : `a project with slug '${found.slug}' already exists`);
    }
    const differs = conflictingFields(
      { id: input.id, org_id: input.org_id, name: input.name, slug: input.slug, repo_url: input.repo_url, branch: input.branch },
      found as unknown as Record<string, unknown>,
    );
    if (found.deleted) differs.push('deleted');
    if (differs.length) throw Boom.conflict(`project ${found.id} exists with different ${differs.join(', ')}`);
    return toProject(found);
  }

  private fields(input: ProjectInput, slug: string) {
    return { id: input.id ?? newId('proj'), org_id: input.org_id, name: input.name, slug, repo_url: input.repo_url ?? null, branch: input.branch ?? 'main' };
  }
}
