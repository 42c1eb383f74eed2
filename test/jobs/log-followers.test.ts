import test from 'ava';
import { startTestServer, bootstrapAdmin, as, type TestServer } from '../support/server.ts';
import { AttemptLogs } from '../../plugins/jobs/logs/attempt-logs.ts';
import { Tokens } from '../../core/tokens.ts';

/**
 * Many clients following one attempt's log share its reads: a new line costs the database a few
 * statements, not a few per follower (each follower used to read the attempt and the lines itself).
 */
const FOLLOWERS = 40;
let srv: TestServer;

test.before(async () => {
  srv = await startTestServer({ overrides: { roles: ['api'] } });
});
test.after.always(() => srv?.stop());

/** Reads one stream until `done` says its text is complete. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, done: (text: string) => boolean): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  while (!done(text)) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    text += decoder.decode(value, { stream: true });
  }
  return text;
}

test(`${FOLLOWERS} followers of one log each get every line, and a new line costs a few statements, not some per follower`, async (t) => {
  const { token } = await bootstrapAdmin(srv.server);
  const api = as(srv.server, token);
  const org = (await api.post('/orgs', { name: 'Followed' })).body;
  const project = (await api.post('/projects', { org_id: org.id, name: 'Followed', slug: 'followed' })).body;
  const job = (await api.post(`/projects/${project.id}/jobs`, { description: 'printing' })).body;
  const attempt = (await api.post(`/jobs/${job.id}/claim`, { lease_seconds: 600 })).body.attempt;
  const logs = srv.kernel.container.resolve(AttemptLogs);
  const aborts = new AbortController();
  const readers = [];
  for (let i = 0; i < FOLLOWERS; i++) {
    const res = await fetch(`${srv.url}/jobs/${job.id}/attempts/${attempt.id}/logs/stream`, {
      headers: { authorization: `Bearer ${token}` },
      signal: aborts.signal,
    });
    t.is(res.status, 200);
    const reader = res.body!.getReader();
    await readUntil(reader, (text) => text.includes('stream open'));
    readers.push(reader);
  }
  await new Promise((resolve) => setTimeout(resolve, 200)); // every stream has made its first reads and sleeps
  const db = srv.kernel.container.resolve(Tokens.Db);
  let statements = 0;
  const count = (q: { sql: string }) => {
    if (/from "(attempt_logs|job_attempts)"/.test(q.sql) && /^select/i.test(q.sql)) statements++;
  };
  db.on('query', count);
  try {
    for (let seq = 1; seq <= 5; seq++) {
      await logs.append(job.id, attempt.id, [{ seq, stream: 'stdout', line: `line ${seq}`, at: new Date() }]);
      const texts = await Promise.all(readers.map((r) => readUntil(r, (text) => text.includes(`line ${seq}`))));
      for (const text of texts) t.true(text.includes(`"line":"line ${seq}"`));
    }
  } finally {
    db.off('query', count);
    aborts.abort();
  }
  // Per line: whether the attempt has ended, the new lines, the check that nothing more came (3); before, 3 per follower.
  t.true(statements <= 5 * 4, `${statements} reads for 5 lines and ${FOLLOWERS} followers`);
});
