/**
 * End to end: the real `svc` CLI (node dist/cli/bin.js, a subprocess) against the real server on a fresh
 * database, with real SSH keys made by ssh-keygen. Covers "the CLI can bootstrap, log in by SSH key,
 * and manage orgs, projects and members".
 *
 * One serial flow in one test: every step depends on the state the previous ones left.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../dist/cli/bin.js', import.meta.url));
const CLI_TIMEOUT_MS = 90_000;
const UNKNOWN_ORG = 'org_01m7zvfyp0eny8kxqtqaddgz9z'; // well-formed, never created

let server: TestServer;
let work: string;

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `node dist/cli/bin.js ...args` with HOME, SVC_API_URL and only the SVC_* variables given in `env`:
 * nothing from the test's own environment that could change what the CLI does.
 */
function svc(home: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const clean: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, SVC_API_URL: server.url, ...env };
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: clean, cwd: home, timeout: CLI_TIMEOUT_MS }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** What to print when an assertion on a CLI run fails. */
const show = (args: string[], r: CliResult) => `svc ${args.join(' ')} → exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

test.before(async () => {
  work = await mkdtemp(join(tmpdir(), 'svc-cli-e2e-'));
  server = await startTestServer();
});

test.after.always(async () => {
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

test('the CLI bootstraps, logs in by SSH key, and manages orgs, projects and members', async (t) => {
  t.timeout(180_000);

  /** Run the CLI as `home` and expect exit 0. */
  const ok = async (home: string, args: string[], env?: Record<string, string>): Promise<string> => {
    const r = await svc(home, args, env);
    t.is(r.code, 0, show(args, r));
    if (r.code !== 0) throw new Error(show(args, r)); // later steps would only fail confusingly
    return r.stdout;
  };
  /** Same, parsing --json output. */
  const json = async <T = any>(home: string, args: string[], env?: Record<string, string>): Promise<T> => {
    const out = await ok(home, [...args, '--json'], env);
    try {
      return JSON.parse(out) as T;
    } catch {
      throw new Error(`not JSON from svc ${args.join(' ')} --json:\n${out}`);
    }
  };
  /** Run the CLI and expect exit 1 with `svc: <message> (<status>)` on stderr and nothing on stdout. */
  const fails = async (home: string, args: string[], status: number, message: RegExp, env?: Record<string, string>) => {
    const r = await svc(home, args, env);
    t.is(r.code, 1, show(args, r));
    t.is(r.stdout, '', show(args, r));
    const first = r.stderr.split('\n')[0];
    t.regex(first, new RegExp(`^svc: .*\\(${status}\\)$`), show(args, r));
    t.regex(first, message, show(args, r));
    return r;
  };

  // --- Keys: the admin's default ed25519 key, Carol's ecdsa key in her own HOME -------------------------
  const adminHome = join(work, 'admin');
  const carolHome = join(work, 'carol');
  await mkdir(join(adminHome, '.ssh'), { recursive: true, mode: 0o700 });
  await mkdir(join(carolHome, '.ssh'), { recursive: true, mode: 0o700 });
  const adminKey = join(adminHome, '.ssh', 'id_ed25519');
  const carolKey = join(carolHome, '.ssh', 'carol_ecdsa'); // not a default name: login must use --key
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'admin@example.com', '-f', adminKey]);
  await run('ssh-keygen', ['-q', '-t', 'ecdsa', '-b', '256', '-N', '', '-C', 'carol@example.com', '-f', carolKey]);

  // --- Bootstrap -------------------------------------------------------------------------------------
  const status = await json(adminHome, ['auth', 'status']);
  t.like(status, { completed: false, window_open: true, requires_token: false, mode: 'auto-open' });

  const boot = await svc(adminHome, ['auth', 'bootstrap', '--email', 'admin@example.com']);
  t.is(boot.code, 0, show(['auth', 'bootstrap'], boot));
  const urlPattern = server.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  t.regex(boot.stdout, new RegExp(`^Bootstrapped admin; logged in as admin@example\\.com on ${urlPattern}( until \\S+)?\\.\\n$`));
  t.regex(boot.stderr, new RegExp(`Registered SSH key ${adminKey}\\.pub\\.`));

  const credentialsFile = join(adminHome, '.svc', 'credentials.json');
  t.is((await stat(credentialsFile)).mode & 0o777, 0o600);
  t.is((await stat(join(adminHome, '.svc'))).mode & 0o777, 0o700);
  const afterBootstrap = JSON.parse(await readFile(credentialsFile, 'utf8'));
  t.deepEqual(Object.keys(afterBootstrap), [server.url]);
  t.is(afterBootstrap[server.url].email, 'admin@example.com');
  t.regex(afterBootstrap[server.url].access_token, /^\S{20,}$/);

  t.like(await json(adminHome, ['auth', 'status']), { completed: true, window_open: false });
  // The bootstrap registered the default public key.
  const adminKeys = await json(adminHome, ['auth', 'keys', 'list']);
  t.is(adminKeys.data.length, 1);
  t.like(adminKeys.data[0], { type: 'ssh-ed25519', label: 'bootstrap' });
  // A second bootstrap is refused.
  await fails(adminHome, ['auth', 'bootstrap', '--email', 'mallory@example.com'], 409, /already completed/);

  // --- Logout, then login with the real challenge/sign/verify ------------------------------------------
  t.is(await ok(adminHome, ['auth', 'logout']), `Logged out of ${server.url}.\n`);
  t.deepEqual(JSON.parse(await readFile(credentialsFile, 'utf8')), {});
  const loggedOut = await fails(adminHome, ['auth', 'whoami'], 401, /./);
  t.regex(loggedOut.stderr, /hint: not logged in/);

  const login = await ok(adminHome, ['auth', 'login', '--email', 'admin@example.com']);
  t.regex(login, new RegExp(`^Logged in as admin@example\\.com on ${urlPattern}( until \\S+)?\\.\\n$`));
  const afterLogin = JSON.parse(await readFile(credentialsFile, 'utf8'));
  t.deepEqual(Object.keys(afterLogin), [server.url]);
  t.not(afterLogin[server.url].access_token, afterBootstrap[server.url].access_token);
  t.is((await stat(credentialsFile)).mode & 0o777, 0o600);

  const me = await json(adminHome, ['auth', 'whoami']);
  t.like(me, { user: { email: 'admin@example.com', is_admin: true }, token: { scope: null } });

  // --- Orgs ------------------------------------------------------------------------------------------
  const acme = await json(adminHome, ['org', 'create', 'Acme']);
  t.like(acme, { name: 'Acme', deleted: false });
  t.regex(acme.id, /^org_[0-9a-z]{26}$/);
  const org = acme.id as string;
  const other = await json(adminHome, ['org', 'create', 'Globex']); // Carol must not see this one

  const orgTable = await ok(adminHome, ['org', 'list']);
  const [header, ...rows] = orgTable.trimEnd().split('\n');
  t.regex(header, /^ID\s+NAME\s+SLUG\s+CREATED$/);
  t.true(
    rows.some((row) => row.startsWith(org) && /\sAcme\s/.test(row)),
    orgTable,
  );
  t.true(
    rows.some((row) => row.startsWith(other.id)),
    orgTable,
  );

  const ensured = await json(adminHome, ['org', 'ensure', 'Acme']);
  t.is(ensured.id, org);
  t.is((await json(adminHome, ['org', 'get', org])).name, 'Acme');

  const bob = await json(adminHome, ['org', 'members', 'add', org, '--email', 'bob@example.com', '--role', 'admin']);
  t.like(bob, { email: 'bob@example.com', role: 'admin' });
  const orgMembers = await json(adminHome, ['org', 'members', 'list', org]);
  const byEmail = (list: { data: { email: string; role: string }[] }) => Object.fromEntries(list.data.map((m) => [m.email, m.role]));
  t.deepEqual(byEmail(orgMembers), { 'admin@example.com': 'owner', 'bob@example.com': 'admin' });

  // --- Projects --------------------------------------------------------------------------------------
  const projectArgs = ['My App', '--org', org, '--slug', 'myapp', '--repo-url', 'file:///tmp/repo'];
  const app = await json(adminHome, ['project', 'create', ...projectArgs]);
  t.like(app, { org_id: org, name: 'My App', slug: 'myapp', repo_url: 'file:///tmp/repo', branch: 'main', deleted: false });
  t.regex(app.id, /^proj_[0-9a-z]{26}$/);
  const project = app.id as string;
  t.is((await json(adminHome, ['project', 'ensure', ...projectArgs])).id, project);

  t.like(await json(adminHome, ['project', 'members', 'add', project, '--email', 'dave@example.com']), { email: 'dave@example.com', role: 'member' });
  const dave = (await json(adminHome, ['project', 'members', 'list', project])).data.find((m: { email: string }) => m.email === 'dave@example.com');
  t.truthy(dave);
  t.like(await json(adminHome, ['project', 'members', 'set-role', project, dave.user_id, '--role', 'admin']), { user_id: dave.user_id, role: 'admin' });
  t.is(byEmail(await json(adminHome, ['project', 'members', 'list', project]))['dave@example.com'], 'admin');
  t.is(await ok(adminHome, ['project', 'members', 'remove', project, dave.user_id]), `Removed member ${dave.user_id} from project ${project}.\n`);
  t.false('dave@example.com' in byEmail(await json(adminHome, ['project', 'members', 'list', project])));

  t.like(await json(adminHome, ['project', 'update', project, '--name', 'My Renamed App']), { id: project, name: 'My Renamed App', slug: 'myapp' });
  t.is((await json(adminHome, ['project', 'get', project])).name, 'My Renamed App');

  // A second project that stays, so "no longer listed" is not just "the list is empty".
  const keep = await json(adminHome, ['project', 'create', 'Keeper', '--org', org, '--slug', 'keep']);
  t.is(await ok(adminHome, ['project', 'delete', project]), `Deleted project ${project}.\n`);
  const live = await json(adminHome, ['project', 'list', '--org', org]);
  t.deepEqual(
    live.data.map((p: { id: string }) => p.id),
    [keep.id],
  );
  const liveTable = await ok(adminHome, ['project', 'list']);
  t.true(liveTable.includes(keep.id), liveTable);
  t.false(liveTable.includes(project), liveTable);
  const all = await json(adminHome, ['project', 'list', '--org', org, '--include-deleted']);
  t.like(
    all.data.find((p: { id: string }) => p.id === project),
    { deleted: true, name: 'My Renamed App' },
  );
  t.regex(await ok(adminHome, ['project', 'list', '--include-deleted']), new RegExp(`^${project}\\s.*\\strue$`, 'm'));

  // --- Errors: the server's message, exit 1 --------------------------------------------------------------
  // Joi's message from the server, naming the field and the value.
  await fails(adminHome, ['project', 'create', 'x', '--org', org, '--slug', 'ab'], 400, /"slug" with value "ab" fails/);
  await fails(adminHome, ['org', 'get', UNKNOWN_ORG], 404, new RegExp(UNKNOWN_ORG));

  // --- A second user: minted token, her own ecdsa key, login, member-only rights ---------------------------
  const mintArgs = ['auth', 'mint', '--email', 'carol@example.com', '--org', org, '--role', 'member'];
  const mint = await svc(adminHome, mintArgs);
  t.is(mint.code, 0, show(mintArgs, mint));
  const minted = mint.stdout.trim();
  t.regex(minted, /^\S{20,}$/);
  t.regex(mint.stderr, /Minted a member token for carol@example\.com on org /);
  // The admin's stored login is untouched by minting.
  t.deepEqual(JSON.parse(await readFile(credentialsFile, 'utf8')), afterLogin);

  const mintedMe = await json(carolHome, ['auth', 'whoami'], { SVC_TOKEN: minted });
  t.like(mintedMe, { user: { email: 'carol@example.com', is_admin: false }, token: { scope: { type: 'org', id: org }, role: 'member' } });

  // A token minted into one org cannot manage the account's login keys (it would escape its scope)...
  await fails(carolHome, ['auth', 'keys', 'add', `${carolKey}.pub`], 403, /cannot manage SSH keys; use a login token/, { SVC_TOKEN: minted });
  // ...so the administrator onboards her key while minting, and she logs in with it herself.
  const onboard = await svc(adminHome, [...mintArgs, '--key', `${carolKey}.pub`, '--json']);
  t.is(onboard.code, 0, show(mintArgs, onboard));
  t.like(JSON.parse(onboard.stdout), { user: { email: 'carol@example.com' }, scope: { type: 'org', id: org }, role: 'member' });
  // SVC_TOKEN is used, never stored.
  await t.throwsAsync(stat(join(carolHome, '.svc', 'credentials.json')), { code: 'ENOENT' });

  // Carol logs in with her ecdsa key (not a default name, so --key), from her own HOME.
  const carolLogin = await ok(carolHome, ['auth', 'login', '--email', 'carol@example.com', '--key', carolKey]);
  t.regex(carolLogin, /^Logged in as carol@example\.com /);
  const carolCredentials = JSON.parse(await readFile(join(carolHome, '.svc', 'credentials.json'), 'utf8'));
  t.is(carolCredentials[server.url].email, 'carol@example.com');
  t.like(await json(carolHome, ['auth', 'whoami']), { user: { email: 'carol@example.com', is_admin: false }, token: { scope: null } });

  const carolOrgs = await json(carolHome, ['org', 'list']);
  t.deepEqual(
    carolOrgs.data.map((o: { id: string; name: string }) => [o.id, o.name]),
    [[org, 'Acme']],
  );
  await fails(carolHome, ['org', 'members', 'add', org, '--email', 'eve@example.com'], 403, /^svc: missing permission members:write \(403\)$/);
  await fails(carolHome, ['org', 'get', other.id], 404, new RegExp(other.id));
  // Carol's key does not log in anyone else.
  await fails(carolHome, ['auth', 'login', '--email', 'admin@example.com', '--key', carolKey], 401, /no key .* is registered for admin@example\.com/);
  // ... and a failed login leaves her stored token alone.
  t.deepEqual(JSON.parse(await readFile(join(carolHome, '.svc', 'credentials.json'), 'utf8')), carolCredentials);
});
