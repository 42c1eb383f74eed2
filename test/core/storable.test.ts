import test from 'ava';
import { MAX_JSON_DEPTH, describeUnstorable, findUnstorable, storableText } from '../../core/db/storable.ts';

function nested(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

test('finds NUL characters and lone surrogates in strings and keys, with the path', (t) => {
  t.is(findUnstorable({ a: 'ok', b: ['x', { c: 'emoji \u{1F600} is a valid pair' }] }), null);
  t.deepEqual(findUnstorable({ a: { b: ['x', 'y\u0000'] } }), { path: 'a.b[1]', problem: 'contains a NUL character (\\u0000)' });
  t.deepEqual(findUnstorable({ s: 'high \ud83d alone' }), { path: 's', problem: 'contains a lone UTF-16 surrogate (not valid Unicode)' });
  t.deepEqual(findUnstorable({ s: '\ude00 low first' }), { path: 's', problem: 'contains a lone UTF-16 surrogate (not valid Unicode)' });
  t.like(findUnstorable({ 'k\u0000': 1 }), { path: 'k\\u0000', problem: 'has a key that contains a NUL character (\\u0000)' });
  t.deepEqual(findUnstorable('\u0000'), { path: '', problem: 'contains a NUL character (\\u0000)' });
  t.is(findUnstorable(Buffer.from([0, 0xd8])), null, 'bytes are not text');
});

test(`nesting: ${MAX_JSON_DEPTH} levels pass, one more does not, and 100,000 levels are found without deep recursion`, (t) => {
  t.is(findUnstorable(nested(MAX_JSON_DEPTH)), null);
  t.like(findUnstorable(nested(MAX_JSON_DEPTH + 1)), { problem: `is nested more than ${MAX_JSON_DEPTH} levels deep` });
  const found = findUnstorable({ hints: nested(100_000) }, 'payload')!;
  t.true(found.path.startsWith('payload.hints[0][0]'));
  t.regex(describeUnstorable(found), /^payload\.hints\[0\].{0,120} is nested more than 64 levels deep$/);
});

test('storableText replaces NUL and lone surrogates with U+FFFD and keeps valid pairs', (t) => {
  t.is(storableText('a\u0000b\ud800c\u{1F600}'), 'a\uFFFDb\uFFFDc\u{1F600}');
});
