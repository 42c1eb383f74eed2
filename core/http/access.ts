import Boom from '@hapi/boom';
import type { Request, Server } from '@hapi/hapi';
import { type Access, type TargetPointer } from '../auth/access.ts';
import type { Permission } from '../auth/permissions.ts';
import type { Grant, Principal } from '../auth/principal.ts';

/**
 * Every authenticated route declares what it needs in `options.plugins.svc.access`:
 * - `'authenticated'`: any valid token (the handler narrows what it shows),
 * - `'system_admin'`: the system administrator,
 * - `{permission, target}`: the permission on the org or project that the named target resolver finds.
 * The boot fails when a route declares nothing.
 */
export type RouteAccess = 'authenticated' | 'system_admin' | { permission: Permission; target: string };

/** `notFound`: the 404 message when the caller cannot see the target, so a job's project id is never revealed. */
export type ResolvedTarget = TargetPointer & { notFound?: string };
export type TargetResolver = (request: Request) => ResolvedTarget | null | Promise<ResolvedTarget | null>;

declare module '@hapi/hapi' {
  interface PluginSpecificConfiguration {
    /** `bytes`: payload fields stored as bytes, not text, so NUL and the like are theirs to carry (core/http/storable-input.ts). */
    svc?: { access: RouteAccess; bytes?: string[] };
  }
  interface RequestApplicationState {
    grant?: Grant;
  }
}

export const requires = (permission: Permission, target: string) => ({ svc: { access: { permission, target } as RouteAccess } });
export const authenticated = { svc: { access: 'authenticated' as RouteAccess } };
export const systemAdmin = { svc: { access: 'system_admin' as RouteAccess } };

/** The caller of an authenticated request. */
export const principalOf = (request: Request): Principal => (request.auth.credentials as { principal: Principal }).principal;

/** The grant the access check left for this request (routes with a target only). */
export function grantOf(request: Request): Grant {
  if (!request.app.grant) throw new Error(`route ${request.route.path} has no target access declared`);
  return request.app.grant;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const orgAt = (v: unknown): TargetPointer | null => (str(v) ? { org: v as string } : null);
/** A project; on a route that also names a job, that job too, which a job token must own. */
const projectAt = (v: unknown, job?: unknown): TargetPointer | null => (str(v) ? { project: v as string, ...(str(job) ? { job: job as string } : {}) } : null);

/** Named ways to find a route's target; plugins add their own (a job id → its project). */
export class AccessTargets {
  private readonly resolvers = new Map<string, TargetResolver>([
    ['org', (r) => orgAt(r.params.org_id)],
    ['project', (r) => projectAt(r.params.project_id, r.params.job_id)],
    ['payload.org', (r) => orgAt((r.payload as Record<string, unknown> | null)?.org_id)],
  ]);

  register(name: string, resolver: TargetResolver): void {
    if (this.resolvers.has(name)) throw new Error(`access target '${name}' is already registered`);
    this.resolvers.set(name, resolver);
  }

  get(name: string): TargetResolver {
    const resolver = this.resolvers.get(name);
    if (!resolver) throw new Error(`unknown access target '${name}'`);
    return resolver;
  }
}

/** Runs after validation, before the handler: the same Access decision for every route. */
export function installAccessCheck(server: Server, access: Access, targets: AccessTargets): void {
  server.ext('onPreHandler', async (request, h) => {
    const declared = request.route.settings.plugins?.svc?.access;
    if (!declared || !request.auth.isAuthenticated) return h.continue;
    const principal = principalOf(request);
    if (declared === 'authenticated') return h.continue;
    if (declared === 'system_admin') {
      if (!principal.isAdmin) throw Boom.forbidden('this operation needs the system administrator');
      return h.continue;
    }
    const pointer = await targets.get(declared.target)(request);
    if (!pointer) throw Boom.notFound('not found');
    try {
      request.app.grant = await access.authorize(principal, declared.permission, pointer);
    } catch (e) {
      if (pointer.notFound && Boom.isBoom(e) && e.output.statusCode === 404) throw Boom.notFound(pointer.notFound);
      throw e;
    }
    return h.continue;
  });

  server.ext('onPreStart', () => {
    for (const route of server.table()) {
      const declared = route.settings.plugins?.svc?.access;
      if ((route.settings.auth as unknown) === false) continue; // explicitly public
      if (!declared) throw new Error(`route ${route.method.toUpperCase()} ${route.path} declares no access (options.plugins.svc.access)`);
      if (typeof declared === 'object') targets.get(declared.target);
    }
  });
}
