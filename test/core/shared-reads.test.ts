import test from 'ava';
import { SharedReads } from '../../core/shared-reads.ts';

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('reads asked for in one turn of the event loop are made once, and each caller gets the answer', async (t) => {
  const reads = new SharedReads();
  let loads = 0;
  const load = async () => ++loads;
  const answers = await Promise.all(Array.from({ length: 50 }, () => reads.read('k', load)));
  t.is(loads, 1);
  t.deepEqual(new Set(answers), new Set([1]));
});

test('a read asked for once the load has started gets a load of its own, never an answer read before it asked', async (t) => {
  const reads = new SharedReads();
  let value = 'old';
  let release!: () => void;
  const slow = () =>
    new Promise<string>((resolve) => {
      const seen = value; // what the database held when the statement ran
      release = () => resolve(seen);
    });
  const first = reads.read('k', slow);
  await tick(); // the load has started
  value = 'new'; // a commit, then the wake-up of a second follower
  const second = reads.read('k', () => Promise.resolve(value));
  release();
  t.is(await first, 'old');
  t.is(await second, 'new');
});

test('different keys are read apart, and a failed load fails every caller of its group only', async (t) => {
  const reads = new SharedReads();
  const bad = Promise.all([reads.read('a', () => Promise.reject(new Error('boom'))), reads.read('a', () => Promise.resolve(1))]);
  const good = reads.read('b', () => Promise.resolve(2));
  await t.throwsAsync(bad, { message: 'boom' });
  t.is(await good, 2);
  t.is(await reads.read('a', () => Promise.resolve(3)), 3);
});
