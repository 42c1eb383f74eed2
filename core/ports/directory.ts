import type { InjectionToken } from 'tsyringe';
import type { Db } from '../db/knex.ts';
import type { Principal } from '../auth/principal.ts';
import { declareSlot, PortSlot, type Registrar } from './slot.ts';

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
  /** Outside a transaction remembered per process until the project changes (a notice reaches every process within milliseconds). */
  byId(id: string, db?: Db): Promise<ProjectEntry | undefined>;
  /** Those of the ids that exist, in no particular order. */
  byIds(ids: string[], db?: Db): Promise<ProjectEntry[]>;
  /**
   * The slugs of those of the projects that exist and are not deleted, read outside any transaction:
   * remembered per process (slugs never change) until the project changes.
   */
  liveSlugs(ids: string[]): Promise<Map<string, string>>;
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
  /** The org with this id or slug (manifests name orgs either way). */
  byRef(ref: string, db?: Db): Promise<OrgEntry | undefined>;
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

/** The slots the projects, orgs and auth plugins fill (core/ports/slot.ts). */
export const ProjectDirectorySlotToken = Symbol('ProjectDirectorySlot') as InjectionToken<PortSlot<ProjectDirectory>>;
export const OrgDirectorySlotToken = Symbol('OrgDirectorySlot') as InjectionToken<PortSlot<OrgDirectory>>;
export const UserDirectorySlotToken = Symbol('UserDirectorySlot') as InjectionToken<PortSlot<UserDirectory>>;

/** The kernel's part: the three slots, and their ports under the directory tokens. */
export function declareDirectories(container: Registrar): void {
  declareSlot(container, ProjectDirectorySlotToken, ProjectDirectoryToken, new PortSlot<ProjectDirectory>('projects', 'directory'));
  declareSlot(container, OrgDirectorySlotToken, OrgDirectoryToken, new PortSlot<OrgDirectory>('orgs', 'directory'));
  declareSlot(container, UserDirectorySlotToken, UserDirectoryToken, new PortSlot<UserDirectory>('auth', 'directory'));
}
