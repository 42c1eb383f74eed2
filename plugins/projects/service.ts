import Boom from '@hapi/boom';
import { inject, injectable } from 'tsyringe';
import { newId } from '../../core/ids.ts';
import { Access } from '../../core/auth/access.ts';
import { ROLE_PERMISSIONS } from '../../core/auth/permissions.ts';
import type { Grant, Principal } from '../../core/auth/principal.ts';
import { conflictingFields, isUniqueViolation } from '../../core/http/unique.ts';
import { projectSlugFrom, varySlug } from '../../core/slugs.ts';
import { ProjectRepository, toProject, type Project, type ProjectRow } from './repository.ts';

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
    @inject(ProjectRepository) private readonly projects: ProjectRepository,
    @inject(Access) private readonly access: Access,
  ) {}

  /** A chosen slug must be free (409); one derived from the name is varied until it is. */
  async create(input: ProjectInput): Promise<Project> {
    const derived = input.slug === undefined;
    let slug = input.slug ?? projectSlugFrom(input.name);
    for (let attempt = 0; ; attempt++) {
      try {
        return toProject(await this.projects.insert(this.fields(input, slug)));
      } catch (e) {
        if (isUniqueViolation(e, 'projects_pkey')) throw Boom.conflict(`project ${input.id} already exists`);
        if (!isUniqueViolation(e, 'projects_slug_unique')) throw e;
        if (!derived || attempt >= SLUG_ATTEMPTS) throw Boom.conflict(`project slug '${slug}' is taken`);
        slug = varySlug(slug, attempt);
      }
    }
  }

  /** Find-or-create by id, else slug, else name within the org; 409 when it exists with other parameters. */
  async ensure(principal: Principal, input: ProjectInput): Promise<Project> {
    const found = await this.find(input);
    if (!found) {
      try {
        return await this.create(input);
      } catch (e) {
        // Lost a race to a concurrent ensure: compare against the winner.
        const winner = Boom.isBoom(e) && e.output.statusCode === 409 ? await this.find(input) : undefined;
        if (!winner) throw e;
        return this.compare(principal, input, winner);
      }
    }
    return this.compare(principal, input, found);
  }

  async get(id: string): Promise<Project> {
    return toProject((await this.projects.byId(id))!);
  }

  async update(grant: Grant, changes: ProjectChanges): Promise<Project> {
    const current = (await this.projects.byId(grant.projectId!))!;
    if (changes.slug !== undefined && changes.slug !== current.slug) throw Boom.badData(`"slug" is immutable (it is '${current.slug}')`);
    if (changes.deleted !== undefined && !ROLE_PERMISSIONS[grant.role].has('projects:delete')) throw Boom.forbidden('missing permission projects:delete');
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
    if (!(await this.access.grantOn(principal, { project: found.id }))) throw Boom.conflict(`a project with slug '${found.slug}' already exists`);
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
