import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { svc, show } from './cli-run.ts';

let server: TestServer;
let home: string;
let env: Record<string, string>;
let orgId: string;
let projectId: string;
let userId: string;

test.before(async () => {
  home = await mkdtemp(join(tmpdir(), 'svc-secrets-cli-'));
  server = await startTestServer();
  const admin = await bootstrapAdmin(server.server);
  userId = admin.userId;
  const api = as(server.server, admin.token);
  orgId = (await api.post('/orgs', { name: 'Cli Org' })).body.id;
  projectId = (await api.post('/projects', { org_id: orgId, name: 'Cli', slug: 'clip' })).body.id;
  env = { SVC_API_URL: server.url, SVC_TOKEN: admin.token };
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const resolve = (name: string) => server.kernel.container.resolve(SecretResolverToken).resolve(name, { projectId, userId });

test.serial('set from --value, --from-file and stdin; set again replaces; values never printed', async (t) => {
  const set = async (args: string[], stdin?: string) => {
    const r = await svc(home, ['secrets', 'set', ...args, '--project', projectId], env, stdin);
    t.is(r.code, 0, show(args, r));
    return r;
  };
  const first = await set(['FROM_FLAG', '--value', 'flag-value-1', '--scope', 'project']);
  t.regex(first.stdout, /^name: +FROM_FLAG\ntype: +env\nscope: +project\n/);
  t.false(first.stdout.includes('flag-value-1'));
  t.is(await resolve('FROM_FLAG'), 'flag-value-1');

  const file = join(home, 'key.pem');
  await writeFile(file, 'line one\nline two\n');
  await set(['FROM_FILE', '--from-file', file, '--type', 'file', '--scope', 'project']);
  t.is(await resolve('FROM_FILE'), 'line one\nline two\n', 'a file is kept byte for byte');

  await set(['FROM_STDIN', '--scope', 'project'], 'piped-value\n');
  t.is(await resolve('FROM_STDIN'), 'piped-value', 'one trailing newline from stdin is dropped');

  const again = await set(['FROM_FLAG', '--value', 'flag-value-2', '--type', 'code_host_token', '--scope', 'project']);
  t.regex(again.stdout, /type: +code_host_token/);
  t.is(await resolve('FROM_FLAG'), 'flag-value-2');
});

test.serial('list and delete at each scope, with --json', async (t) => {
  for (const scope of ['org', 'user', 'system']) {
    const r = await svc(home, ['secrets', 'set', 'SCOPED', '--value', `v-${scope}`, '--scope', scope, '--org', orgId], env);
    t.is(r.code, 0, show(['set', scope], r));
  }
  const list = await svc(home, ['secrets', 'list', '--scope', 'project', '--project', projectId], env);
  t.is(list.code, 0, show(['list'], list));
  t.regex(list.stdout, /^NAME +TYPE +SCOPE +UPDATED\nFROM_STDIN +env +project /);
  const json = await svc(home, ['--json', 'secrets', 'list', '--scope', 'user'], env);
  const body = JSON.parse(json.stdout);
  t.deepEqual(
    body.data.map((s: { name: string }) => s.name),
    ['SCOPED'],
  );
  t.is(body.data[0].scope, 'user');
  t.false(json.stdout.includes('v-user'));

  for (const scope of ['org', 'user', 'system']) {
    const r = await svc(home, ['secrets', 'delete', 'SCOPED', '--scope', scope, '--org', orgId], env);
    t.is(r.code, 0, show(['delete', scope], r));
    t.is(r.stdout, `Deleted ${scope} secret SCOPED.\n`);
  }
  const empty = await svc(home, ['secrets', 'list', '--scope', 'system'], env);
  t.is(empty.stdout, 'No secrets.\n');
});

test.serial('usage and API errors', async (t) => {
  const noScope = await svc(home, ['secrets', 'list'], env);
  t.is(noScope.code, 2);
  t.regex(noScope.stderr, /--scope is required/);
  const badScope = await svc(home, ['secrets', 'list', '--scope', 'team'], env);
  t.is(badScope.code, 2);
  t.regex(badScope.stderr, /--scope must be one of project, org, user, system/);
  const noProject = await svc(home, ['secrets', 'list', '--scope', 'project'], env);
  t.is(noProject.code, 2);
  t.regex(noProject.stderr, /--scope project needs a project/);
  const badName = await svc(home, ['secrets', 'set', 'lower', '--value', 'v-secret', '--scope', 'system'], env);
  t.is(badName.code, 1);
  t.regex(badName.stderr, /^svc: "name" with value "lower" fails to match .* \(400\)/);
  t.false(badName.stderr.includes('v-secret'));
  const missing = await svc(home, ['secrets', 'delete', 'NOPE', '--scope', 'system'], env);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /^svc: secret NOPE not found in system scope \(404\)/);
});

test.serial(
  'system secrets: set --shared-with-jobs, unshare and share again decide whether jobs resolve them; integration secrets cannot be shared',
  async (t) => {
    const jobResolves = () =>
      resolve('SHARED_KEY').then(
        (v) => v,
        () => null,
      );
    const set = await svc(home, ['secrets', 'set', 'SHARED_KEY', '--value', 'shared-value', '--scope', 'system', '--shared-with-jobs'], env);
    t.is(set.code, 0, show(['set'], set));
    t.regex(set.stdout, /shared_with_jobs: +true/);
    t.is(await jobResolves(), 'shared-value');

    const unshare = await svc(home, ['secrets', 'unshare', 'SHARED_KEY'], env);
    t.is(unshare.code, 0, show(['unshare'], unshare));
    t.regex(unshare.stdout, /shared_with_jobs: +false/);
    t.is(await jobResolves(), null, 'unshared, no job resolves it');

    t.is((await svc(home, ['secrets', 'share', 'SHARED_KEY'], env)).code, 0);
    t.is(await jobResolves(), 'shared-value');

    await svc(home, ['secrets', 'set', 'CHATAPP_SIGNING_SECRET', '--value', 'platform', '--scope', 'system'], env);
    const refused = await svc(home, ['secrets', 'share', 'CHATAPP_SIGNING_SECRET'], env);
    t.not(refused.code, 0);
    t.regex(refused.stderr, /shared_with_jobs/);

    const misplaced = await svc(home, ['secrets', 'set', 'X_KEY', '--value', 'v', '--scope', 'project', '--project', projectId, '--shared-with-jobs'], env);
    t.not(misplaced.code, 0);
    t.regex(misplaced.stderr, /--shared-with-jobs is for system secrets/);
  },
);
