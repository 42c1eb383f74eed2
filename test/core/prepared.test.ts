import test from 'ava';
import { createKnex } from '../../core/db/knex.ts';
import { createLogger } from '../../core/logger.ts';
import { Prepared } from '../../core/db/prepared.ts';
import { createTestDatabase } from '../support/database.ts';

test('a prepared statement is planned once per connection, and prepared again when a schema change alters its answer', async (t) => {
  const database = await createTestDatabase();
  const db = createKnex(database.url, 1, createLogger('silent'));
  t.teardown(async () => {
    await db.destroy();
    await database.drop();
  });
  await db.raw('CREATE TABLE things (id int PRIMARY KEY, name text)');
  await db.raw(`INSERT INTO things VALUES (1, 'one'), (2, 'two')`);
  const byIds = new Prepared<Record<string, unknown>>('test_things', 'SELECT * FROM things WHERE id = ANY(?) ORDER BY id');
  t.deepEqual(await byIds.rows(db, [[1, 2]]), [
    { id: 1, name: 'one' },
    { id: 2, name: 'two' },
  ]);
  const prepared = async () =>
    (await db.raw(`SELECT name FROM pg_prepared_statements WHERE name LIKE 'svc_test_things_%' ORDER BY name`)).rows.map((r: { name: string }) => r.name);
  t.deepEqual(await prepared(), ['svc_test_things_0'], 'named, on the pool’s one connection');

  // What a newer replica's migration does under a running process.
  await db.raw(`ALTER TABLE things ADD COLUMN colour text DEFAULT 'red'`);
  t.deepEqual(await byIds.rows(db, [[2]]), [{ id: 2, name: 'two', colour: 'red' }]);
  t.deepEqual(await prepared(), ['svc_test_things_0', 'svc_test_things_1'], 'prepared again under a new name');
  t.deepEqual(await byIds.rows(db, [[1]]), [{ id: 1, name: 'one', colour: 'red' }]);
  t.deepEqual(await prepared(), ['svc_test_things_0', 'svc_test_things_1'], 'and only once');

  await t.throwsAsync(byIds.rows(db, [['not a number']]), { message: /invalid input syntax/ }, 'other errors are the caller’s');
});
