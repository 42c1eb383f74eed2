// The compiled server (what `npm start` runs) loads a third party's TypeScript harness plugin by path.
import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../core/db/embedded.ts';
import { createTestDatabase } from '../support/database.ts';
import { ROOT, serveProcess, waitForHealth } from '../support/serve-process.ts';

test('the compiled server loads examples/harness-plugin (index.ts) through the TypeScript loader', async (t) => {
  t.timeout(120_000);
  const database = await createTestDatabase();
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-compiled-plugin-'));
  const config = path.join(dir, 'svc.yaml');
  writeFileSync(config, `harnesses:\n  plugins: [${path.join(ROOT, 'examples/harness-plugin')}]\n`);
  const url = `http://127.0.0.1:${await freePort()}`;
  const proc = serveProcess({ DATABASE_URL: database.url, SVC_DATA_DIR: dir, SVC_CONFIG: config, SVC_ROLES: 'api', PORT: new URL(url).port });
  try {
    await waitForHealth(url, proc);
    const boot = await (
      await fetch(`${url}/auth/bootstrap`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'a@example.com' }),
      })
    ).json();
    const res = await fetch(`${url}/harnesses/acme`, { headers: { authorization: `Bearer ${boot.access_token}` } });
    t.is(res.status, 200, proc.output());
    t.is((await res.json()).name, 'acme');
  } finally {
    proc.child.kill('SIGTERM');
    await proc.exited;
    await database.drop();
  }
});
