import test from 'ava';
import { startTestServer } from '../support/server.ts';

for (const roles of [['orchestrator'], ['worker'], ['orchestrator', 'worker']]) {
  test(`a process with only ${roles.join(',')} answers the probes and nothing of the API`, async (t) => {
    const s = await startTestServer({ overrides: { roles } });
    try {
      t.not(s.url, '', 'it listens');
      const ready = await fetch(`${s.url}/health`);
      t.is(ready.status, 200);
      t.like(await ready.json(), { status: 'ok', roles, database: { ok: true } });
      const live = await fetch(`${s.url}/health/live`);
      t.is(live.status, 200);
      t.deepEqual(await live.json(), { status: 'ok', roles });
      t.is((await fetch(`${s.url}/orgs`)).status, 404);
      t.is((await fetch(`${s.url}/openapi.json`)).status, 404);
    } finally {
      await s.stop();
    }
  });
}

test('the api role answers /health/live too, without asking the database', async (t) => {
  const s = await startTestServer();
  try {
    const live = await fetch(`${s.url}/health/live`);
    t.is(live.status, 200);
    t.deepEqual(await live.json(), { status: 'ok', roles: ['api'] });
  } finally {
    await s.stop();
  }
});
