import { inject, injectable } from '../di.ts';
import { Tokens } from '../tokens.ts';
import type { Db } from '../db/knex.ts';
import { Batcher } from '../batcher.ts';
import { AuthCache } from './cache.ts';
import type { Memo } from '../memo.ts';
import { isPermission, isRoleName, ROLE_PERMISSIONS, strongerRole, type Permission, type RoleName } from './permissions.ts';

/** Who permissions are resolved for: a user, a service account, or a group. */
export type ActorType = 'user' | 'service_account' | 'group';
export interface Actor {
  type: ActorType;
  id: string;
}

/** An org, or a project (its org is looked up). */
export type TargetPointer = { org: string } | { project: string };

/** One thing that gives the actor permissions on the target: what `explain` shows. */
export type Source =
  | { kind: 'system_admin' }
  | { kind: 'org_membership'; role: RoleName }
  | { kind: 'project_membership'; role: RoleName }
  | { kind: 'binding'; binding_id: string; role: string; role_name: string; project_id: string | null; via_group: string | null };

export interface Resolution {
  orgId: string;
  projectId: string | null;
  /** Empty when the actor holds nothing here: the target is then invisible to it. */
  sources: readonly (Source & { permissions: Permission[] })[];
  /** The strongest built-in role among the sources (memberships and built-in role bindings). */
  role: RoleName | null;
  permissions: ReadonlySet<Permission>;
}

interface Key {
  actor: Actor;
  orgId: string | null;
  projectId: string | null;
}

interface Row {
  i: string;
  org_id: string;
  project_id: string | null;
  org_role: RoleName | null;
  project_role: RoleName | null;
  bindings: { id: string; role: string; role_name: string | null; permissions: string[] | null; project_id: string | null; via_group: string | null }[];
}

/**
 * The one place permissions are worked out: memberships, then role bindings (direct or through a
 * group; org-wide or for the target project). Routes, lists and `access/can|explain` all ask here.
 */
@injectable()
export class PermissionResolver {
  private readonly batch = new Batcher<Key, Row | undefined>((keys) => this.rows(keys));
  private readonly known: Memo<Row>;
  private readonly built = new WeakMap<Row, Resolution>();

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(AuthCache) cache: AuthCache,
  ) {
    this.known = cache.memo();
  }

  /** Null when the target does not exist. */
  async resolve(actor: Actor, target: TargetPointer): Promise<Resolution | null> {
    const key: Key = 'project' in target ? { actor, orgId: null, projectId: target.project } : { actor, orgId: target.org, projectId: null };
    const row = await this.known.get(`${actor.type} ${actor.id} ${key.orgId ?? ''} ${key.projectId ?? ''}`, () => this.batch.submit(key));
    if (!row) return null;
    let resolution = this.built.get(row);
    if (!resolution) this.built.set(row, (resolution = build(row)));
    return resolution;
  }

  private async rows(keys: Key[]): Promise<(Row | undefined)[]> {
    const { rows } = await this.db.raw<{ rows: Row[] }>(
      `SELECT k.i, t.org_id, t.project_id, om.role AS org_role, pm.role AS project_role,
         coalesce((
           SELECT json_agg(json_build_object('id', b.id, 'role', b.role, 'role_name', r.name, 'permissions', r.permissions, 'project_id', b.project_id,
                                             'via_group', CASE WHEN b.principal_type = 'group' AND k.actor_type <> 'group' THEN b.principal_id END) ORDER BY b.created_at)
           FROM access_bindings b LEFT JOIN access_roles r ON r.id = b.role AND r.org_id = b.org_id
           WHERE b.org_id = t.org_id AND (b.project_id IS NULL OR b.project_id = t.project_id)
             AND ((b.principal_type = k.actor_type AND b.principal_id = k.actor_id)
               OR (b.principal_type = 'group' AND b.principal_id IN (
                     SELECT gm.group_id FROM access_group_members gm WHERE gm.principal_type = k.actor_type AND gm.principal_id = k.actor_id)))
         ), '[]') AS bindings
       FROM unnest(?::text[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS k(actor_type, actor_id, org_id, project_id, i)
       JOIN LATERAL (
         SELECT p.org_id, p.id AS project_id FROM projects p WHERE p.id = k.project_id
         UNION ALL
         SELECT o.id, NULL FROM orgs o WHERE k.project_id IS NULL AND o.id = k.org_id
       ) t ON true
       LEFT JOIN org_members om ON k.actor_type = 'user' AND om.org_id = t.org_id AND om.user_id = k.actor_id
       LEFT JOIN project_members pm ON k.actor_type = 'user' AND pm.project_id = t.project_id AND pm.user_id = k.actor_id`,
      // nulls bind as SQL NULL
      [keys.map((k) => k.actor.type), keys.map((k) => k.actor.id), keys.map((k) => k.orgId) as string[], keys.map((k) => k.projectId) as string[]],
    );
    const byIndex = new Map(rows.map((r) => [Number(r.i), r]));
    return keys.map((_, i) => byIndex.get(i + 1));
  }
}

/** The sources and permissions of a resolution row: built once per remembered row (rows are never changed). */
function build(row: Row): Resolution {
  const sources: (Source & { permissions: Permission[] })[] = [];
  if (row.org_role) sources.push({ kind: 'org_membership', role: row.org_role, permissions: [...ROLE_PERMISSIONS[row.org_role]] });
  if (row.project_role) sources.push({ kind: 'project_membership', role: row.project_role, permissions: [...ROLE_PERMISSIONS[row.project_role]] });
  for (const b of row.bindings) {
    const permissions = isRoleName(b.role) ? [...ROLE_PERMISSIONS[b.role]] : (b.permissions ?? []).filter(isPermission);
    sources.push({
      kind: 'binding',
      binding_id: b.id,
      role: b.role,
      role_name: b.role_name ?? b.role,
      project_id: b.project_id,
      via_group: b.via_group,
      permissions,
    });
  }
  const builtIn = sources.map((s) => ('role' in s && isRoleName(s.role) ? s.role : null));
  return {
    orgId: row.org_id,
    projectId: row.project_id,
    sources,
    role: builtIn.reduce<RoleName | null>((a, b) => strongerRole(a, b), null),
    permissions: new Set(sources.flatMap((s) => s.permissions)),
  };
}
