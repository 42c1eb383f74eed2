import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Server } from '@hapi/hapi';
import type { Logger } from 'pino';
import { loadConfig, merge } from '../../core/config/load.ts';
import { startKernel, type Kernel, type KernelOptions } from '../../core/kernel.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';

const TEST_CONFIG = fileURLToPath(new URL('../../config/test.yaml', import.meta.url));

export interface TestServer {
  kernel: Kernel;
  server: Server;
  /** Base URL of the listening server (for the CLI and HTTP clients). */
  url: string;
  dataDir: string;
  triggerFile: string;
  stop(): Promise<void>;
}

/**
 * A started server on its own fresh database and data folder, listening on a free port.
 * `env` sets environment variables as the config loader reads them (SVC_BOOTSTRAP_TOKEN, NODE_ENV, …);
 * the machine's own environment is not read.
 */
export interface TestServerOptions {
  env?: Record<string, string>;
  overrides?: Record<string, unknown>;
  /** Share one database between servers (replicas); the caller drops it. */
  database?: TestDatabase;
  logger?: Logger;
  configure?: KernelOptions['configure'];
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const database = opts.database ?? (await createTestDatabase());
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-test-data-'));
  const triggerFile = path.join(dataDir, 'bootstrap-enable');
  const cleanup = async () => {
    if (!opts.database) await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  let kernel: Kernel;
  try {
    const config = loadConfig({
      env: { SVC_CONFIG: TEST_CONFIG, ...opts.env },
      overrides: merge(
        {
          data_dir: dataDir,
          database: { url: database.url },
          auth: { bootstrap_trigger_file: triggerFile },
          // Replicas sharing a database must share the master key too.
          secrets: { master_key: createHash('sha256').update(database.url).digest('hex') },
        },
        opts.overrides ?? {},
      ),
    });
    // Agenda checks a running job's lock every half lifetime on a timer it never cancels, which would
    // keep the test process alive that long after the server stopped (60 s at the default lifetime).
    const scheduler = config.adapters.scheduler;
    if (scheduler.use === 'agenda') scheduler.options = { lock_lifetime_ms: 3_000, ...scheduler.options };
    kernel = await startKernel(config, { logger: opts.logger, configure: opts.configure });
  } catch (e) {
    await cleanup(); // a boot that fails on purpose must not leave its database behind
    throw e;
  }
  return {
    kernel,
    server: kernel.server!,
    url: kernel.url,
    dataDir,
    triggerFile,
    stop: async () => {
      await kernel.stop();
      await cleanup();
    },
  };
}

export interface Reply<T = any> {
  statusCode: number;
  body: T;
  headers: Record<string, unknown>;
}

/** `server.inject` with JSON in and out, as `token` (or anonymous). */
export async function call<T = any>(server: Server, method: string, url: string, payload?: unknown, token?: string): Promise<Reply<T>> {
  const res = await server.inject({
    method,
    url,
    payload: payload as object | undefined,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  let body: any = res.payload;
  try {
    body = res.payload ? JSON.parse(res.payload) : null;
  } catch {
    /* not JSON */
  }
  // A server error in a test that does not expect one is otherwise only an undefined field later on.
  if (res.statusCode >= 500) console.error(`test client: ${method} ${url} → ${res.statusCode} ${res.payload.slice(0, 500)}`);
  return { statusCode: res.statusCode, body, headers: res.headers };
}

/** A client bound to one token. */
export function as(server: Server, token?: string) {
  return {
    get: <T = any>(url: string) => call<T>(server, 'GET', url, undefined, token),
    post: <T = any>(url: string, payload?: unknown) => call<T>(server, 'POST', url, payload ?? {}, token),
    patch: <T = any>(url: string, payload: unknown) => call<T>(server, 'PATCH', url, payload, token),
    put: <T = any>(url: string, payload: unknown) => call<T>(server, 'PUT', url, payload, token),
    delete: <T = any>(url: string) => call<T>(server, 'DELETE', url, undefined, token),
  };
}

/** Creates the first administrator through the real bootstrap route. */
export async function bootstrapAdmin(server: Server, email = 'admin@example.com', bootstrapToken?: string): Promise<{ token: string; userId: string }> {
  const body = { email, ...(bootstrapToken ? { token: bootstrapToken } : {}) };
  let res = await call(server, 'POST', '/auth/bootstrap', body);
  // A 503 (the shared test cluster too busy: a lock wait past lock_timeout, say) wrote nothing; as any
  // client should, ask again after Retry-After. Setup is not what these tests are about.
  for (let tries = 1; res.statusCode === 503 && tries < 5; tries++) {
    await new Promise((r) => setTimeout(r, Number(res.headers['retry-after'] ?? 1) * 1000));
    res = await call(server, 'POST', '/auth/bootstrap', body);
  }
  if (res.statusCode !== 201) throw new Error(`bootstrap failed: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return { token: res.body.access_token, userId: res.body.user.id };
}

/** The first admin (with the server's SVC_BOOTSTRAP_TOKEN, as production needs) and an org of theirs. */
export async function adminWithOrg(server: Server, bootstrapToken: string): Promise<{ api: ReturnType<typeof as>; orgId: string; token: string }> {
  const { token } = await bootstrapAdmin(server, 'admin@example.com', bootstrapToken);
  const api = as(server, token);
  const orgId = (await api.post('/orgs', { name: 'Tenant' })).body.id as string;
  return { api, orgId, token };
}

/** A token for `email` with `role` in the org, minted by the admin (creates user and membership). */
export async function userInOrg(server: Server, adminToken: string, orgId: string, email: string, role = 'member'): Promise<string> {
  const res = await call(server, 'POST', `/orgs/${orgId}/members`, { email, role }, adminToken);
  if (res.statusCode !== 201 && res.statusCode !== 200) throw new Error(`add member failed: ${JSON.stringify(res.body)}`);
  const kernel = server.app.container;
  const { TokenService } = await import('../../core/auth/tokens.ts');
  const user = await kernel.resolve((await import('../../plugins/auth/users.ts')).Users).findByEmail(email);
  return (await kernel.resolve(TokenService).issueForUser(user!)).access_token;
}
