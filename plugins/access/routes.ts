import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';
import { grantOf, principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { listQuerySchema, pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import * as S from './schemas.ts';
import { AccessRoles, type RoleInput } from './roles.ts';
import { AccessGroups } from './groups.ts';
import { AccessBindings, type BindingFilters, type BindingInput } from './bindings.ts';
import { AccessCheck, type CheckQuery } from './check.ts';

const tags = ['api', 'access'];
const read = requires('access:read', 'org');
const admin = requires('access:admin', 'org');

const explanationSchema = Joi.object({
  allowed: Joi.boolean().required(),
  principal: Joi.object({ type: Joi.string().required(), id: Joi.string().required() }).required(),
  target: Joi.object().unknown(true).required(),
  required: Joi.array().items(Joi.string()).required(),
  sources: Joi.array()
    .items(Joi.object({ kind: Joi.string().required(), grants: Joi.array().items(Joi.string()).required() }).unknown(true))
    .required(),
  reason: Joi.string().required(),
}).label('AccessExplanation');

/** Custom roles, groups, bindings, and the permission check (`can`, `explain`) of an org. */
export function accessRoutes(container: DependencyContainer): ServerRoute[] {
  const roles = container.resolve(AccessRoles);
  const groups = container.resolve(AccessGroups);
  const bindings = container.resolve(AccessBindings);
  const check = container.resolve(AccessCheck);
  const org = (request: Parameters<typeof paramsOf>[0]) => paramsOf(request).org_id;

  return [
    {
      method: 'GET',
      path: '/orgs/{org_id}/access/can',
      options: {
        id: 'checkAccess',
        tags,
        description: 'Whether a user, service account or group holds a permission (or a resource action) on the org or one of its projects',
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: S.checkQuery },
        response: { schema: Joi.object({ allowed: Joi.boolean().required() }).label('AccessCan') },
      },
      handler: async (request) => ({ allowed: (await check.explain(org(request), queryOf<CheckQuery>(request))).allowed }),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/access/explain',
      options: {
        id: 'explainAccess',
        tags,
        description: 'The resolution behind `can`: each membership, binding and group that grants something, and why the answer is what it is',
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: S.checkQuery },
        response: { schema: explanationSchema },
      },
      handler: (request) => check.explain(org(request), queryOf<CheckQuery>(request)),
    },

    // roles
    {
      method: 'GET',
      path: '/orgs/{org_id}/access/roles',
      options: {
        id: 'listAccessRoles',
        tags,
        description: 'Custom roles, newest first',
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: listQuerySchema },
        response: { schema: pageSchema(S.roleSchema, 'AccessRoleList') },
      },
      handler: (request) => roles.list(org(request), queryOf<ListQuery>(request)),
    },
    {
      method: 'POST',
      path: '/orgs/{org_id}/access/roles',
      options: {
        id: 'createAccessRole',
        tags,
        description: 'Create a custom role from catalog permissions (unknown permission: 400)',
        plugins: { ...admin, ...docs(400, 401, 403, 404, 409) },
        validate: { params: S.orgParams, payload: S.createRole },
        response: { status: { 201: S.roleSchema } },
      },
      handler: async (request, h) => h.response(await roles.create(org(request), payloadOf<RoleInput>(request))).code(201),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/access/roles/{role_id}',
      options: {
        id: 'getAccessRole',
        tags,
        description: 'One custom role',
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.roleParams },
        response: { schema: S.roleSchema },
      },
      handler: (request) => roles.get(org(request), paramsOf(request).role_id),
    },
    {
      method: 'PATCH',
      path: '/orgs/{org_id}/access/roles/{role_id}',
      options: {
        id: 'updateAccessRole',
        tags,
        description: "Change a custom role's permissions or description",
        plugins: { ...admin, ...docs(400, 401, 403, 404) },
        validate: { params: S.roleParams, payload: S.updateRole },
        response: { schema: S.roleSchema },
      },
      handler: (request) => roles.update(org(request), paramsOf(request).role_id, payloadOf(request)),
    },
    {
      method: 'DELETE',
      path: '/orgs/{org_id}/access/roles/{role_id}',
      options: {
        id: 'deleteAccessRole',
        tags,
        description: 'Delete a custom role no binding uses (409 otherwise)',
        plugins: { ...admin, ...docs(204, 400, 401, 403, 404, 409) },
        validate: { params: S.roleParams },
      },
      handler: async (request, h) => {
        await roles.remove(org(request), paramsOf(request).role_id);
        return h.response().code(204);
      },
    },

    // bindings
    {
      method: 'GET',
      path: '/orgs/{org_id}/access/bindings',
      options: {
        id: 'listAccessBindings',
        tags,
        description: 'Role bindings, newest first; filter by principal or project',
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: S.listBindingsQuery },
        response: { schema: pageSchema(S.bindingSchema, 'AccessBindingList') },
      },
      handler: (request) => bindings.list(org(request), queryOf<BindingFilters>(request)),
    },
    {
      method: 'POST',
      path: '/orgs/{org_id}/access/bindings',
      options: {
        id: 'createAccessBinding',
        tags,
        description:
          'Give a built-in or custom role to a user, service account or group, org-wide or on one project; you cannot give permissions you do not hold',
        plugins: { ...admin, ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: S.orgParams, payload: S.createBinding },
        response: { status: { 201: S.bindingSchema } },
      },
      handler: async (request, h) =>
        h.response(await bindings.create(grantOf(request), org(request), payloadOf<BindingInput>(request), principalOf(request).id)).code(201),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/access/bindings/{binding_id}',
      options: {
        id: 'getAccessBinding',
        tags,
        description: 'One binding',
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.bindingParams },
        response: { schema: S.bindingSchema },
      },
      handler: (request) => bindings.get(org(request), paramsOf(request).binding_id),
    },
    {
      method: 'DELETE',
      path: '/orgs/{org_id}/access/bindings/{binding_id}',
      options: {
        id: 'deleteAccessBinding',
        tags,
        description: 'Remove a binding',
        plugins: { ...admin, ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.bindingParams },
      },
      handler: async (request, h) => {
        await bindings.remove(org(request), paramsOf(request).binding_id);
        return h.response().code(204);
      },
    },

    // groups
    {
      method: 'GET',
      path: '/orgs/{org_id}/access/groups',
      options: {
        id: 'listAccessGroups',
        tags,
        description: 'Groups, newest first',
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: listQuerySchema },
        response: { schema: pageSchema(S.groupSchema, 'AccessGroupList') },
      },
      handler: (request) => groups.list(org(request), queryOf<ListQuery>(request)),
    },
    {
      method: 'POST',
      path: '/orgs/{org_id}/access/groups',
      options: {
        id: 'createAccessGroup',
        tags,
        description: 'Create a group',
        plugins: { ...admin, ...docs(400, 401, 403, 404, 409) },
        validate: { params: S.orgParams, payload: S.createGroup },
        response: { status: { 201: S.groupSchema } },
      },
      handler: async (request, h) => h.response(await groups.create(org(request), payloadOf(request))).code(201),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/access/groups/{group_id}',
      options: {
        id: 'getAccessGroup',
        tags,
        description: 'One group',
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.groupParams },
        response: { schema: S.groupSchema },
      },
      handler: (request) => groups.get(org(request), paramsOf(request).group_id),
    },
    {
      method: 'DELETE',
      path: '/orgs/{org_id}/access/groups/{group_id}',
      options: {
        id: 'deleteAccessGroup',
        tags,
        description: 'Delete a group, its memberships and the bindings made to it',
        plugins: { ...admin, ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.groupParams },
      },
      handler: async (request, h) => {
        await groups.remove(org(request), paramsOf(request).group_id);
        return h.response().code(204);
      },
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/access/groups/{group_id}/members',
      options: {
        id: 'listAccessGroupMembers',
        tags,
        description: 'Members of a group',
        plugins: { ...read, ...docs(400, 401, 403, 404) },
        validate: { params: S.groupParams, query: listQuerySchema },
        response: { schema: pageSchema(S.groupMemberSchema, 'AccessGroupMemberList') },
      },
      handler: (request) => groups.members(org(request), paramsOf(request).group_id, queryOf<ListQuery>(request)),
    },
    {
      method: 'POST',
      path: '/orgs/{org_id}/access/groups/{group_id}/members',
      options: {
        id: 'addAccessGroupMember',
        tags,
        description: 'Add a user or service account of the org (201; 200 when already a member)',
        plugins: { ...admin, ...docs(400, 401, 403, 404) },
        validate: { params: S.groupParams, payload: S.groupMember },
        response: { schema: S.groupMemberSchema },
      },
      handler: async (request, h) => {
        const { member, created } = await groups.addMember(org(request), paramsOf(request).group_id, payloadOf(request));
        return h.response(member).code(created ? 201 : 200);
      },
    },
    {
      method: 'DELETE',
      path: '/orgs/{org_id}/access/groups/{group_id}/members/{principal_type}/{principal_id}',
      options: {
        id: 'removeAccessGroupMember',
        tags,
        description: 'Remove a member from a group',
        plugins: { ...admin, ...docs(204, 400, 401, 403, 404) },
        validate: { params: S.groupMemberParams },
      },
      handler: async (request, h) => {
        const p = paramsOf(request);
        await groups.removeMember(p.org_id, p.group_id, p.principal_type, p.principal_id);
        return h.response().code(204);
      },
    },
  ];
}
