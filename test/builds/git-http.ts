import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A private copy of the repository at `source`, served over git's dumb HTTP protocol with TLS on
 * loopback (projects take https:// repositories only); every request needs the Basic auth the
 * worker's checkout sends for a token (`x-access-token:<token>`). Git trusts the server's
 * self-signed certificate through GIT_SSL_CAINFO, which this sets for the calling process (and the
 * git processes it starts). `sync()` copies the source's new commits over.
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
  const key = path.join(root, 'key.pem');
  const cert = path.join(root, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  process.env.GIT_SSL_CAINFO = cert;
  const expected = `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
  const seen = { authorized: 0, refused: 0 };
  const server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    // The scheme is case-insensitive (BuildKit's git source sends `basic`).
    if (req.headers.authorization?.replace(/^basic /i, 'Basic ') !== expected) {
      seen.refused++;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="private"' }).end('authentication required\n');
      return;
    }
    seen.authorized++;
    const url = new URL(req.url ?? '/', 'http://x');
    const file = path.resolve(root, `.${decodeURIComponent(url.pathname)}`);
    if (!file.startsWith(`${bare}${path.sep}`) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `https://127.0.0.1:${port}/app.git`,
    seen,
    sync,
    async stop() {
      await new Promise((resolve) => server.close(resolve));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
