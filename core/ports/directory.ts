import type { InjectionToken } from 'tsyringe';
import type { Db } from '../db/knex.ts';
import type { Principal } from '../auth/principal.ts';

/**
 * What other domains may know of a project, an org or a user. The owning plugin (projects, orgs,
 * auth) registers the implementation; everyone else asks here instead of reading its table
 * (core/db/table-owners.ts). Every method takes an optional transaction to read in.
 */
export interface ProjectEntry {
  id: string;
  org_id: string;
  name: string;
  slug: string;
  branch: string;
  repo_url: string | null;
  deleted: boolean;
  created_at: Date;
}

export interface ProjectDirectory {
  byId(id: string, db?: Db): Promise<ProjectEntry | undefined>;
  /** Those of the ids that exist, in no particular order. */
  byIds(ids: string[], db?: Db): Promise<ProjectEntry[]>;
  /** Ids of the org's projects (deleted ones too), oldest first. */
  idsInOrg(orgId: string, db?: Db): Promise<string[]>;
  /** Ids of the org's live projects, oldest first. */
  liveIdsInOrg(orgId: string, db?: Db): Promise<string[]>;
  /** Whether the principal may see the project at all (it exists and they hold something on it). */
  visibleTo(principal: Principal, projectId: string): Promise<boolean>;
}

export interface OrgEntry {
  id: string;
  name: string;
  slug: string;
  deleted: boolean;
  created_at: Date;
}

export interface OrgDirectory {
  byId(id: string, db?: Db): Promise<OrgEntry | undefined>;
  byIds(ids: string[], db?: Db): Promise<OrgEntry[]>;
  /** Ids of the soft-deleted orgs. */
  deletedIds(db?: Db): Promise<string[]>;
}

export interface UserEntry {
  id: string;
  email: string;
  display_name: string | null;
  is_admin: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface UserDirectory {
  findById(id: string, db?: Db): Promise<UserEntry | undefined>;
  /** Case-insensitive. */
  findByEmail(email: string, db?: Db): Promise<UserEntry | undefined>;
  /** The account with this e-mail, created when missing (safe when two requests race). */
  ensure(email: string, displayName?: string | null, db?: Db): Promise<{ user: UserEntry; created: boolean }>;
}

export const ProjectDirectoryToken = Symbol('ProjectDirectory') as InjectionToken<ProjectDirectory>;
export const OrgDirectoryToken = Symbol('OrgDirectory') as InjectionToken<OrgDirectory>;
export const UserDirectoryToken = Symbol('UserDirectory') as InjectionToken<UserDirectory>;

/**
 * A directory the kernel declares and the owning plugin fills when it registers, so a consumer can
 * be built before its owner (auth registers before orgs and projects, yet reads both). Calling it
 * before it is filled fails naming the plugin to load.
 */
export class DirectorySlot<T extends object> {
  private impl: T | null = null;
  readonly port: T;

  constructor(owner: string) {
    this.port = new Proxy({} as T, {
      get: (_target, key) => {
        if (!this.impl) throw new Error(`the ${owner} plugin is not loaded: nothing answers ${String(key)} of its directory`);
        const value = (this.impl as Record<string | symbol, unknown>)[key];
        return typeof value === 'function' ? value.bind(this.impl) : value;
      },
    });
  }

  fill(impl: T): void {
    this.impl = impl;
  }
}

export const ProjectDirectorySlotToken = Symbol('ProjectDirectorySlot') as InjectionToken<DirectorySlot<ProjectDirectory>>;
export const OrgDirectorySlotToken = Symbol('OrgDirectorySlot') as InjectionToken<DirectorySlot<OrgDirectory>>;
export const UserDirectorySlotToken = Symbol('UserDirectorySlot') as InjectionToken<DirectorySlot<UserDirectory>>;

/** The kernel's part: the three slots, and their ports under the directory tokens. */
export function declareDirectories(container: { registerInstance<T>(token: InjectionToken<T>, instance: T): unknown }): void {
  const slots = [
    [ProjectDirectorySlotToken, ProjectDirectoryToken, new DirectorySlot<ProjectDirectory>('projects')],
    [OrgDirectorySlotToken, OrgDirectoryToken, new DirectorySlot<OrgDirectory>('orgs')],
    [UserDirectorySlotToken, UserDirectoryToken, new DirectorySlot<UserDirectory>('auth')],
  ] as const;
  for (const [slotToken, portToken, slot] of slots) {
    container.registerInstance(slotToken as InjectionToken<DirectorySlot<object>>, slot);
    container.registerInstance(portToken as InjectionToken<object>, slot.port);
  }
}
