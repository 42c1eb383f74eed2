import test from 'ava';
import { drawUntilFree } from '../../core/ids.ts';

test('drawUntilFree: the first free draw wins; taken draws (null, or an error it recognises) draw again', async (t) => {
  const tried: number[] = [];
  const taken = new Error('taken');
  const result = await drawUntilFree({
    draws: 5,
    attempt: async (n) => {
      tried.push(n);
      if (n === 0) return null;
      if (n === 1) throw taken;
      return `value-${n}`;
    },
    taken: (e) => e === taken,
    exhausted: () => new Error('none free'),
  });
  t.is(result, 'value-2');
  t.deepEqual(tried, [0, 1, 2]);
});

test('drawUntilFree: after the last taken draw it throws exhausted(); any other error ends it at once', async (t) => {
  let calls = 0;
  await t.throwsAsync(drawUntilFree({ draws: 3, attempt: async () => (calls++, null), exhausted: () => new Error('none free after 3') }), {
    message: 'none free after 3',
  });
  t.is(calls, 3);
  calls = 0;
  await t.throwsAsync(
    drawUntilFree({
      draws: 3,
      attempt: async () => {
        calls++;
        throw new Error('broken');
      },
      taken: () => false,
      exhausted: () => new Error('x'),
    }),
    { message: 'broken' },
  );
  t.is(calls, 1);
});
