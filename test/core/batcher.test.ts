import test from 'ava';
import { Batcher, ItemFailed } from '../../core/batcher.ts';

/** A run function whose batches the test releases by hand, so what coalesces is deterministic. */
function gated<O>(answer: (items: number[]) => (O | ItemFailed)[]) {
  const batches: number[][] = [];
  const releases: (() => void)[] = [];
  const run = async (items: number[]) => {
    batches.push(items);
    await new Promise<void>((r) => releases.push(r));
    return answer(items);
  };
  return { batches, run, release: () => releases.shift()!() };
}

const tick = () => new Promise((r) => setImmediate(r));

test('an idle call goes out alone at once; calls made meanwhile go out together next', async (t) => {
  const g = gated((items) => items.map((i) => i * 10));
  const batcher = new Batcher(g.run, { maxBatch: 100, concurrency: 1 });
  const first = batcher.submit(1);
  await tick();
  t.deepEqual(g.batches, [[1]]);
  const rest = [2, 3, 4].map((i) => batcher.submit(i));
  await tick();
  t.deepEqual(g.batches, [[1]], 'nothing more while one batch is in flight');
  g.release();
  t.is(await first, 10);
  await tick();
  t.deepEqual(g.batches, [[1], [2, 3, 4]]);
  g.release();
  t.deepEqual(await Promise.all(rest), [20, 30, 40]);
});

test('batches hold at most maxBatch items and at most `concurrency` are in flight', async (t) => {
  const g = gated((items) => items);
  const batcher = new Batcher(g.run, { maxBatch: 2, concurrency: 2 });
  const all = [1, 2, 3, 4, 5, 6].map((i) => batcher.submit(i));
  await tick();
  t.deepEqual(g.batches, [[1], [2]], 'the first two calls each found a free slot');
  g.release();
  await tick();
  t.deepEqual(g.batches, [[1], [2], [3, 4]]);
  g.release();
  await tick();
  t.deepEqual(g.batches, [[1], [2], [3, 4], [5, 6]]);
  g.release();
  g.release();
  t.deepEqual(await Promise.all(all), [1, 2, 3, 4, 5, 6]);
});

test('ItemFailed rejects that item alone; a thrown error rejects the whole batch; the batcher goes on', async (t) => {
  let fail = false;
  const batcher = new Batcher(
    async (items: number[]) => {
      if (fail) throw new Error('connection lost');
      return items.map((i) => (i % 2 ? new ItemFailed(new Error(`odd ${i}`)) : i));
    },
    { maxBatch: 10, concurrency: 1 },
  );
  const [one, two] = await Promise.allSettled([batcher.submit(1), batcher.submit(2)]);
  t.like(one, { status: 'rejected', reason: { message: 'odd 1' } });
  t.like(two, { status: 'fulfilled', value: 2 });
  fail = true;
  await t.throwsAsync(batcher.submit(4), { message: 'connection lost' });
  fail = false;
  t.is(await batcher.submit(6), 6);
});

test('a run answering the wrong number of results rejects the batch', async (t) => {
  const batcher = new Batcher(async () => [1], { maxBatch: 10, concurrency: 1 });
  const first = batcher.submit(0);
  await t.throwsAsync(Promise.all([batcher.submit(1), batcher.submit(2)]), { message: 'a batch of 2 answered 1 results' });
  t.is(await first, 1);
});

test('a batch that throws is run again item by item: only the item that caused the error fails', async (t) => {
  const g = gated((items) => {
    if (items.includes(3)) throw new Error('invalid byte sequence for encoding "UTF8": 0x00');
    return items.map((i) => i * 10);
  });
  const batcher = new Batcher(g.run, { maxBatch: 10, concurrency: 1 });
  const first = batcher.submit(1);
  await tick();
  const rest = [2, 3, 4].map((i) => batcher.submit(i));
  g.release();
  t.is(await first, 10);
  await tick();
  g.release(); // the batch [2, 3, 4] fails
  for (let i = 0; i < 3; i++) {
    await tick();
    g.release(); // 2, 3 and 4, each alone
  }
  const settled = await Promise.allSettled(rest);
  t.deepEqual(g.batches, [[1], [2, 3, 4], [2], [3], [4]]);
  t.like(settled[0], { status: 'fulfilled', value: 20 });
  t.like(settled[1], { status: 'rejected', reason: { message: 'invalid byte sequence for encoding "UTF8": 0x00' } });
  t.like(settled[2], { status: 'fulfilled', value: 40 });
});

test('a batch failing because the database is unreachable is not retried item by item', async (t) => {
  let calls = 0;
  const batcher = new Batcher(
    async (items: number[]) => {
      calls++;
      if (calls === 1) return items; // the first, idle call
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    },
    { maxBatch: 10, concurrency: 1 },
  );
  const first = batcher.submit(0);
  const rest = Promise.allSettled([1, 2, 3].map((i) => batcher.submit(i)));
  t.is(await first, 0);
  t.true((await rest).every((r) => r.status === 'rejected'));
  t.is(calls, 2, 'one batch, not one call per item');
});
