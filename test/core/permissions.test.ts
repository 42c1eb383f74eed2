import test from 'ava';
import { PERMISSIONS, ROLE_PERMISSIONS, isPermission } from '../../core/auth/permissions.ts';

test('the catalog holds every permission the spec names, all as <resource>:<action>', (t) => {
  for (const name of ['jobs:harness_override', 'secrets:read', 'orgs:read', 'chat:write', 'jobs:read', 'jobs:admin', 'orgfs:read']) {
    t.true(isPermission(name), name);
  }
  for (const name of Object.keys(PERMISSIONS)) t.regex(name, /^[a-z_]+:[a-z_]+$/);
  t.false(isPermission('toString'), 'prototype keys are not permissions');
});

test('roles nest: owner ⊃ admin ⊃ member, each strictly', (t) => {
  const { owner, admin, member } = ROLE_PERMISSIONS;
  for (const p of member) t.true(admin.has(p), `admin lacks ${p}`);
  for (const p of admin) t.true(owner.has(p), `owner lacks ${p}`);
  t.true(admin.size > member.size);
  t.true(owner.size > admin.size);
  for (const set of [owner, admin, member]) for (const p of set) t.true(isPermission(p), p);
});

test('members create jobs but hold no administrative permission', (t) => {
  const { member, admin } = ROLE_PERMISSIONS;
  t.true(member.has('jobs:create'));
  for (const p of ['members:write', 'projects:create', 'secrets:read', 'jobs:harness_override', 'orgs:delete'] as const) t.false(member.has(p), p);
  t.false(admin.has('orgs:delete'), 'only owners delete the org');
});
