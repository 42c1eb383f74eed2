import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../dist/cli/bin.js', import.meta.url));

/** One request as the fake server saw it. */
export interface Recorded {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization?: string;
  contentType?: string;
  body: unknown;
}

export interface Reply {
  status?: number;
  body?: unknown;
}

export type Handler = (req: Recorded) => Reply | Promise<Reply>;

/** A tiny HTTP server standing in for the svc API: canned answers per "METHOD /path", every request recorded. */
export class FakeApi {
  readonly requests: Recorded[] = [];
  private readonly routes = new Map<string, Handler>();
  private server?: Server;
  url = '';

  on(method: string, path: string, reply: Reply | Handler): this {
    this.routes.set(`${method} ${path}`, typeof reply === 'function' ? reply : () => reply);
    return this;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(({ status = 200, body }) => {
        if (body === undefined) {
          res.writeHead(status).end();
        } else {
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private async handle(req: IncomingMessage): Promise<Reply> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    const recorded: Recorded = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      authorization: req.headers.authorization,
      contentType: req.headers['content-type'],
      body: text === '' ? undefined : JSON.parse(text),
    };
    this.requests.push(recorded);
    const handler = this.routes.get(`${recorded.method} ${recorded.path}`);
    if (!handler) return { status: 404, body: { statusCode: 404, error: 'Not Found', message: 'Not Found' } };
    return handler(recorded);
  }
}

export const startFake = (): Promise<FakeApi> => new FakeApi().start();

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run `node dist/cli/bin.js ...args` with HOME set and no SVC_* variables leaking in from the test's
 * environment. `onStdout` hears the output as it comes (a test of what a command prints live).
 */
export function runCli(home: string, args: string[], env: Record<string, string> = {}, onStdout?: (chunk: string) => void): Promise<CliResult> {
  const clean: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...env };
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { env: clean, cwd: home, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    if (onStdout) child.stdout?.on('data', (chunk: Buffer | string) => onStdout(String(chunk)));
  });
}

/** How a failed `svc` call reads in an assertion message. */
export const showRun = (args: string[], r: CliResult) => `svc ${args.join(' ')} → exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

/**
 * `svc` as one user of one server (read through `at` when called, so it can be set in a before
 * hook): `svc` runs it, `ok` insists on exit 0 and returns stdout, `json` is `ok` with --json, parsed.
 */
export function cliUser(at: () => { home: string; url: string; token: string }) {
  const svc = (args: string[], onStdout?: (chunk: string) => void) => {
    const { home, url, token } = at();
    return runCli(home, args, { SVC_API_URL: url, SVC_TOKEN: token }, onStdout);
  };
  const ok = async (args: string[]): Promise<string> => {
    const r = await svc(args);
    if (r.code !== 0) throw new Error(showRun(args, r));
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '--json']));
  return { svc, ok, json };
}

export const tempHome = (): Promise<string> => mkdtemp(join(tmpdir(), 'svc-cli-home-'));

export const ORG = {
  id: 'org_1',
  name: 'Acme',
  slug: 'acme',
  deleted: false,
  created_at: '2025-01-01T00:00:00.000Z',
  updated_at: '2025-01-01T00:00:00.000Z',
};

export const USER = {
  id: 'usr_1',
  email: 'ada@example.com',
  display_name: 'Ada',
  is_admin: true,
  created_at: '2025-01-01T00:00:00.000Z',
  updated_at: '2025-01-01T00:00:00.000Z',
};

export const page = (data: unknown[], extra: Partial<{ limit: number; offset: number; total: number; has_more: boolean }> = {}) => ({
  data,
  pagination: { limit: 10, offset: 0, count: data.length, total: data.length, has_more: false, ...extra },
});
