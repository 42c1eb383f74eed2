import test from 'ava';
import { rm } from 'node:fs/promises';
import { as, bootstrapAdmin, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { runCli, tempHome, type CliResult } from './helpers.ts';

let server: TestServer;
let home: string;
let env: Record<string, string>;
let orgId: string;
let projectId: string;
let bobId: string;

test.before(async () => {
  home = await tempHome();
  server = await startTestServer();
  const admin = await bootstrapAdmin(server.server);
  const api = as(server.server, admin.token);
  orgId = (await api.post('/orgs', { name: 'Access Cli' })).body.id;
  const project = await api.post('/projects', { org_id: orgId, name: 'Acl', slug: 'aclcli' });
  if (project.statusCode !== 201) throw new Error(`project: ${JSON.stringify(project.body)}`);
  projectId = project.body.id;
  await userInOrg(server.server, admin.token, orgId, 'bob@example.com', 'member');
  const members = (await api.get(`/orgs/${orgId}/members`)).body.data as { user_id: string; email: string }[];
  bobId = members.find((m) => m.email === 'bob@example.com')!.user_id;
  env = { SVC_API_URL: server.url, SVC_TOKEN: admin.token };
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const show = (args: string[], r: CliResult) => `svc ${args.join(' ')} → exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

/** Run the CLI against the test server, in the test org. */
async function svc(args: string[], expected = 0): Promise<CliResult> {
  const r = await runCli(home, [...args, '--org', orgId], env);
  if (r.code !== expected) throw new Error(`expected exit ${expected}\n${show(args, r)}`);
  return r;
}
const json = async (args: string[], expected = 0) => JSON.parse((await svc(['--json', ...args], expected)).stdout);

test.serial('roles, bindings, can and explain', async (t) => {
  const created = await svc(['access', 'roles', 'create', '--name', 'deployer', '--permissions', 'builds:write, environments:write', '--description', 'ships']);
  t.regex(created.stdout, /^id: +role_\S+\nname: +deployer\nscope: +org\npermissions: +builds:write, environments:write\ndescription: +ships\n/);
  const roleId = /^id: +(\S+)$/m.exec(created.stdout)![1];

  const list = await svc(['access', 'roles', 'list']);
  t.regex(list.stdout, new RegExp(`^ID +NAME +SCOPE +PERMISSIONS +DESCRIPTION\n${roleId} +deployer +org +builds:write, environments:write +ships\n$`));
  const listed = await json(['access', 'roles', 'list']);
  t.deepEqual(listed.data[0].permissions, ['builds:write', 'environments:write']);
  t.is(listed.pagination.total, 1);
  const updated = await json(['access', 'roles', 'update', roleId, '--description', 'ships it']);
  t.is(updated.description, 'ships it');
  t.is((await json(['access', 'roles', 'get', roleId])).name, 'deployer');

  const can = ['access', 'can', '--user', bobId, '--permission', 'builds:write'];
  t.is((await svc(can, 1)).stdout, 'denied\n');
  t.deepEqual(await json(can, 1), { allowed: false });
  const why = await svc(['access', 'explain', '--user', bobId, '--permission', 'builds:write']);
  t.regex(
    why.stdout,
    /^answer: +denied\nprincipal: +user usr_\S+\ntarget: +org org_\S+\nrequired: +builds:write\nreason: +missing builds:write: not given by org membership as member\n\n/,
  );
  t.regex(why.stdout, /\nKIND +ROLE +BINDING +PROJECT +VIA_GROUP +GRANTS\norg_membership +member +- +- +- +-\n$/);

  const binding = await svc(['access', 'bindings', 'create', '--role', roleId, '--user', bobId]);
  t.regex(binding.stdout, /^id: +bnd_\S+\nrole: +role_\S+\nprincipal_type: +user\n/);
  t.regex(binding.stdout, /^project_id: +-$/m);
  const bindingId = /^id: +(\S+)$/m.exec(binding.stdout)![1];
  t.is((await svc(can)).stdout, 'allowed\n');
  const explained = await svc(['access', 'explain', '--user', bobId, '--permission', 'builds:write']);
  t.regex(explained.stdout, /^answer: +allowed$/m);
  t.regex(explained.stdout, new RegExp(`^reason: +granted by binding ${bindingId} of role deployer org-wide$`, 'm'));
  t.regex(explained.stdout, new RegExp(`^binding +deployer +${bindingId} +- +- +builds:write$`, 'm'));
  const full = await json(['access', 'explain', '--user', bobId, '--permission', 'builds:write']);
  t.like(full, { allowed: true, principal: { type: 'user', id: bobId }, required: ['builds:write'] });
  t.is(full.sources.length, 2);

  // a project-scoped question
  t.is((await svc([...can, '--project', projectId])).stdout, 'allowed\n', 'org-wide bindings reach projects');
  const inProject = await json(['access', 'explain', '--user', bobId, '--permission', 'builds:write', '--project', projectId]);
  t.is(inProject.target.project_id, projectId);

  const bindings = await svc(['access', 'bindings', 'list', '--principal-type', 'user', '--principal-id', bobId]);
  t.regex(
    bindings.stdout,
    new RegExp(`^ID +ROLE +PRINCIPAL +PRINCIPAL_ID +PROJECT +CREATED\n${bindingId} +${roleId} +user +${bobId} +\\(org-wide\\) +\\S+\n$`),
  );
  t.is((await json(['access', 'bindings', 'list', '--principal-type', 'group'])).data.length, 0);
  t.is((await json(['access', 'bindings', 'list', '--project', projectId])).data.length, 0);

  const inUse = await svc(['access', 'roles', 'delete', roleId], 1);
  t.regex(inUse.stderr, /\(409\)\n$/);
  t.is((await svc(['access', 'bindings', 'delete', bindingId])).stdout, `Deleted binding ${bindingId}.\n`);
  t.is((await svc(can, 1)).stdout, 'denied\n');
  t.is((await svc(['access', 'roles', 'delete', roleId])).stdout, `Deleted role ${roleId}.\n`);
  t.is((await svc(['access', 'roles', 'list'])).stdout, 'No roles.\n');
});

test.serial('groups: members, bindings through a group, resource checks', async (t) => {
  const group = await json(['access', 'groups', 'create', 'writers', '--description', 'may write files']);
  t.regex(group.id, /^grp_/);
  t.regex((await svc(['access', 'groups', 'list'])).stdout, new RegExp(`^ID +NAME +DESCRIPTION +CREATED\n${group.id} +writers +may write files +\\S+\n$`));
  const added = await svc(['access', 'groups', 'add-member', group.id, '--user', bobId]);
  t.regex(added.stdout, new RegExp(`^principal_id: +${bobId}$`, 'm'));
  t.regex((await svc(['access', 'groups', 'members', group.id])).stdout, new RegExp(`^PRINCIPAL +PRINCIPAL_ID +ADDED\nuser +${bobId} +\\S+\n$`));

  const check = ['--user', bobId, '--resource-type', 'orgfs', '--action', 'write', '--resource', 'docs/'];
  t.is((await svc(['access', 'can', ...check], 1)).stdout, 'denied\n');
  const binding = await json(['access', 'bindings', 'create', '--role', 'admin', '--group', group.id, '--project', projectId]);
  t.like(binding, { role: 'admin', principal_type: 'group', principal_id: group.id, project_id: projectId });
  t.is((await svc(['access', 'can', ...check], 1)).stdout, 'denied\n', 'the binding is on the project only');
  t.is((await svc(['access', 'can', ...check, '--project', projectId])).stdout, 'allowed\n');
  const why = await svc(['access', 'explain', ...check, '--project', projectId]);
  t.regex(why.stdout, /^resource: +write on orgfs docs\/$/m);
  t.regex(why.stdout, new RegExp(`^binding +admin +${binding.id} +${projectId} +${group.id} +orgfs:write$`, 'm'));
  t.is((await svc(['access', 'can', '--group', group.id, '--permission', 'orgfs:write', '--project', projectId])).stdout, 'allowed\n');

  t.is((await svc(['access', 'groups', 'remove-member', group.id, '--user', bobId])).stdout, `Removed user ${bobId} from group ${group.id}.\n`);
  t.is((await svc(['access', 'can', ...check, '--project', projectId], 1)).stdout, 'denied\n');
  t.is((await svc(['access', 'groups', 'delete', group.id])).stdout, `Deleted group ${group.id}.\n`);
  t.is((await json(['access', 'bindings', 'list', '--principal-type', 'group'])).data.length, 0, 'its bindings went with it');
});

test.serial('service accounts: create, mint (shown once), list, revoke, delete', async (t) => {
  const sa = await json(['sa', 'create', 'ci-bot', '--description', 'CI', '--role', 'member']);
  t.regex(sa.id, /^sa_/);
  t.regex((await svc(['sa', 'list'])).stdout, new RegExp(`^ID +NAME +DESCRIPTION +CREATED\n${sa.id} +ci-bot +CI +\\S+\n$`));
  t.regex((await svc(['sa', 'get', sa.id])).stdout, /^name: +ci-bot$/m);
  t.is((await json(['access', 'bindings', 'list', '--principal-id', sa.id])).data[0].role, 'member', '--role bound it');
  t.is((await svc(['access', 'can', '--service-account', sa.id, '--permission', 'orgs:read'])).stdout, 'allowed\n');

  const minted = await svc(['sa', 'token', 'mint', sa.id, '--permissions', 'orgs:read,projects:read', '--ttl-days', '2', '--name', 'deploy']);
  const token = minted.stdout.trim();
  t.is(minted.stdout, `${token}\n`, 'stdout is the token alone');
  t.regex(minted.stderr, /^Token sat_\S+ \(org:org_\S+, expires \S+\)\. Store it now: it is not shown again\.\n$/);
  const tokenId = /Token (sat_\S+)/.exec(minted.stderr)![1];
  const bot = as(server.server, token);
  t.is((await bot.get(`/orgs/${orgId}`)).statusCode, 200);
  t.is((await bot.get(`/orgs/${orgId}/members`)).statusCode, 403, 'only the listed permissions');

  const full = await json(['sa', 'token', 'mint', sa.id, '--permissions', 'projects:read', '--scope', 'project', '--project', projectId]);
  t.like(full, { service_account_id: sa.id, scope: { type: 'project', id: projectId }, permissions: ['projects:read'], revoked_at: null, name: null });
  t.is(typeof full.token, 'string');

  const tokens = await svc(['sa', 'token', 'list', sa.id]);
  t.regex(tokens.stdout, /^ID +NAME +SCOPE +PERMISSIONS +EXPIRES +REVOKED\n/);
  t.regex(tokens.stdout, new RegExp(`^${tokenId} +deploy +org:${orgId} +orgs:read, projects:read +\\S+ +-$`, 'm'));
  t.false(tokens.stdout.includes(token));
  t.false(JSON.stringify(await json(['sa', 'token', 'list', sa.id])).includes(token));

  t.is((await svc(['sa', 'token', 'revoke', sa.id, tokenId])).stdout, `Revoked token ${tokenId} of service account ${sa.id}.\n`);
  t.is((await bot.get(`/orgs/${orgId}`)).statusCode, 401);
  t.not((await json(['sa', 'token', 'list', sa.id])).data.find((x: { id: string }) => x.id === tokenId).revoked_at, null);

  const beyond = await svc(['sa', 'token', 'mint', sa.id, '--permissions', 'secrets:admin'], 1);
  t.regex(beyond.stderr, /^svc: service account sa_\S+ does not hold secrets:admin .* \(422\)\n$/);

  t.is((await svc(['sa', 'delete', sa.id])).stdout, `Deleted service account ${sa.id}.\n`);
  t.is((await svc(['sa', 'list'])).stdout, 'No service accounts.\n');
});

test('usage errors exit 2 with one line and a pointer to the help; API errors exit 1', async (t) => {
  const usage = async (args: string[], message: RegExp, withOrg = true) => {
    const r = withOrg ? await svc(args, 2) : await runCli(home, args, env);
    t.is(r.code, 2, show(args, r));
    t.regex(r.stderr, message, args.join(' '));
    t.regex(r.stderr, /^svc: [^\n]+\nsvc: see 'svc (access|sa) --help'\n$/);
  };
  await usage(['access', 'roles', 'create', '--name', 'x'], /^svc: --permissions is required\n/);
  await usage(['access', 'roles', 'create', '--name', 'x', '--permissions', ',', '--scope', 'org'], /--permissions needs at least one value/);
  await usage(['access', 'roles', 'list'], /^svc: missing org: pass --org ID/, false);
  await usage(['access', 'bindings', 'create', '--role', 'member'], /pass exactly one of --user ID \| --service-account ID \| --group ID/);
  await usage(['access', 'bindings', 'create', '--role', 'member', '--user', 'usr_1', '--group', 'grp_1'], /pass exactly one of/);
  await usage(['access', 'can', '--user', 'usr_1'], /pass --permission P, or --resource-type T --action A/);
  await usage(['access', 'can', '--user', 'usr_1', '--resource-type', 'orgfs'], /--resource-type needs --action/);
  await usage(['access', 'groups', 'add-member', 'grp_1', '--group', 'grp_2'], /Unknown option '--group'/);
  await usage(['access', 'frob'], /unknown access command "frob"/);
  await usage(['sa', 'token', 'mint', 'sa_1'], /^svc: --permissions is required\n/);
  await usage(['sa', 'token', 'mint', 'sa_1', '--permissions', 'orgs:read', '--ttl-days', '91'], /--ttl-days must be between 1 and 90/);
  await usage(['sa', 'token', 'revoke', 'sa_1'], /missing argument/);
  await usage(['sa', 'create'], /missing argument/);

  const bad = await svc(['access', 'roles', 'create', '--name', 'bad', '--permissions', 'nope:nope'], 1);
  t.regex(bad.stderr, /not a permission of the catalog \(400\)\n$/);
  const help = await runCli(home, ['sa', '--help'], env);
  t.is(help.code, 0);
  t.regex(help.stdout, /^usage: svc sa <command>/);
});
