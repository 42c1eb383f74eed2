import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A private copy of the repository at `source`, served over git's dumb HTTP protocol on loopback;
 * every request needs the Basic auth the worker's checkout sends for a token (`x-access-token:<token>`).
 * `sync()` copies the source's new commits over.
 */
export async function privateGitServer(source: string, token: string) {
  const root = mkdtempSync(path.join(tmpdir(), 'svc-private-git-'));
  const bare = path.join(root, 'app.git');
  execFileSync('git', ['clone', '--quiet', '--bare', source, bare]);
  const sync = () => {
    execFileSync('git', ['-C', bare, 'fetch', '--quiet', source, '+refs/heads/*:refs/heads/*']);
    execFileSync('git', ['-C', bare, 'update-server-info']);
  };
  execFileSync('git', ['-C', bare, 'update-server-info']);
  const expected = `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
  const seen = { authorized: 0, refused: 0 };
  const server = createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      seen.refused++;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="private"' }).end('authentication required\n');
      return;
    }
    seen.authorized++;
    const url = new URL(req.url ?? '/', 'http://x');
    const file = path.resolve(root, `.${decodeURIComponent(url.pathname)}`);
    if (!file.startsWith(bare + path.sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/app.git`,
    seen,
    sync,
    async stop() {
      await new Promise((resolve) => server.close(resolve));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
