import { paramsOf, queryOf } from '../../core/http/request.ts';
import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { grantOf, requires } from '../../core/http/access.ts';
import { docs, emailSchema, roleSchema, userId } from '../../core/http/schemas.ts';
import { listQuerySchema, pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { Memberships, memberSchema, type MembershipScope } from '../../core/auth/memberships.ts';
import type { RoleName } from '../../core/auth/permissions.ts';

export interface MemberRoutesOptions {
  kind: MembershipScope['kind'];
  /** Path parameter holding the org or project id, e.g. 'org_id'. */
  param: 'org_id' | 'project_id';
  idSchema: Joi.StringSchema;
  tag: string;
}

/** list / add / change role / remove, the same for org and project members. */
export function memberRoutes(container: DependencyContainer, { kind, param, idSchema, tag }: MemberRoutesOptions): ServerRoute[] {
  const memberships = container.resolve(Memberships);
  const base = `/${kind === 'org' ? 'orgs' : 'projects'}/{${param}}/members`;
  const target = kind === 'org' ? 'org' : 'project';
  const tags = ['api', tag];
  const params = Joi.object({ [param]: idSchema.required() });
  const memberParams = params.keys({ user_id: userId.required() });
  const scopeOf = (id: string): MembershipScope => ({ kind, id });
  const noun = kind === 'org' ? 'Org' : 'Project';

  return [
    {
      method: 'GET',
      path: base,
      options: {
        id: `list${noun}Members`,
        tags,
        description: `List ${kind} members`,
        plugins: { ...requires('members:read', target), ...docs(400, 401, 404) },
        validate: { params, query: listQuerySchema },
        response: { schema: pageSchema(memberSchema, 'MemberList') },
      },
      handler: (request) => memberships.list(scopeOf(paramsOf(request)[param]), queryOf<ListQuery>(request)),
    },
    {
      method: 'POST',
      path: base,
      options: {
        id: `add${noun}Member`,
        tags,
        description: `Add a ${kind} member by e-mail (201; 200 when already a member with that role; 409 with another role)`,
        plugins: { ...requires('members:write', target), ...docs(400, 401, 403, 404, 409) },
        validate: { params, payload: Joi.object({ email: emailSchema.required(), role: roleSchema.default('member') }).label('AddMember') },
        response: { status: { 200: memberSchema, 201: memberSchema } },
      },
      handler: async (request, h) => {
        const { email, role } = request.payload as { email: string; role: RoleName };
        const { member, created } = await memberships.add(scopeOf(paramsOf(request)[param]), email, role, grantOf(request).role);
        return h.response(member).code(created ? 201 : 200);
      },
    },
    {
      method: 'PATCH',
      path: `${base}/{user_id}`,
      options: {
        id: `set${noun}MemberRole`,
        tags,
        description: `Change a ${kind} member's role`,
        plugins: { ...requires('members:write', target), ...docs(400, 401, 403, 404, 422) },
        validate: { params: memberParams, payload: Joi.object({ role: roleSchema.required() }).label('SetMemberRole') },
        response: { schema: memberSchema },
      },
      handler: (request) =>
        memberships.setRole(scopeOf(paramsOf(request)[param]), paramsOf(request).user_id, (request.payload as { role: RoleName }).role, grantOf(request).role),
    },
    {
      method: 'DELETE',
      path: `${base}/{user_id}`,
      options: {
        id: `remove${noun}Member`,
        tags,
        description: `Remove a ${kind} member`,
        plugins: { ...requires('members:write', target), ...docs(204, 400, 401, 403, 404, 422) },
        validate: { params: memberParams },
      },
      handler: async (request, h) => {
        await memberships.remove(scopeOf(paramsOf(request)[param]), paramsOf(request).user_id, grantOf(request).role);
        return h.response().code(204);
      },
    },
  ];
}
