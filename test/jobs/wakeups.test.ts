import test from 'ava';
import pg from 'pg';
import { WAKE_CHANNEL } from '../../plugins/jobs/lifecycle/wakeups.ts';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

let s: TestServer;
let listener: pg.Client;
let admin: ReturnType<typeof as>;
let projectId = '';
const heard: number[] = [];

test.before(async () => {
  s = await startTestServer();
  admin = as(s.server, (await bootstrapAdmin(s.server)).token);
  const org = (await admin.post('/orgs', { name: 'Wake' })).body.id;
  projectId = (await admin.post('/projects', { org_id: org, name: 'Wake', slug: 'wake' })).body.id;
  listener = new pg.Client({ connectionString: s.kernel.databaseUrl });
  await listener.connect();
  listener.on('notification', (n) => n.channel === WAKE_CHANNEL && heard.push(Date.now()));
  await listener.query(`LISTEN ${WAKE_CHANNEL}`);
});
test.after.always(async () => {
  await listener?.end();
  await s?.stop();
});

/** Resolves at the next notice on the wake-up channel. */
function nextNotice(): Promise<void> {
  const seen = heard.length;
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 5_000;
    const poll = setInterval(() => {
      if (heard.length > seen) resolve(clearInterval(poll));
      else if (Date.now() > deadline) reject(new Error(`no NOTIFY ${WAKE_CHANNEL} within 5 s`));
    }, 5);
  });
}

test.serial('a new ready job wakes the claimers, and by then its row is committed', async (t) => {
  const notice = nextNotice();
  const job = (await admin.post(`/projects/${projectId}/jobs`, { description: 'wake me' })).body;
  await notice;
  const { rows } = await listener.query('SELECT phase FROM jobs WHERE id = $1', [job.id]);
  t.deepEqual(rows, [{ phase: 'ready' }]);
});

test.serial('a job moved to ready wakes the claimers once the move is committed', async (t) => {
  const job = (await admin.post(`/projects/${projectId}/jobs`, { description: 'later', phase: 'backlog' })).body;
  await new Promise((r) => setTimeout(r, 100)); // let any notice of earlier writes arrive first
  const notice = nextNotice();
  t.is((await admin.patch(`/jobs/${job.id}`, { phase: 'ready' })).statusCode, 200);
  await notice;
  const { rows } = await listener.query('SELECT phase FROM jobs WHERE id = $1', [job.id]);
  t.deepEqual(rows, [{ phase: 'ready' }]);
});
