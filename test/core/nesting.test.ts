import test from 'ava';
import { JsonNesting } from '../../core/nesting.ts';

/** Feeds `text` in chunks of `size` bytes; where the scan stopped and the path it names. */
function scan(text: string, limit: number, size = 7): { at: number | null; path: string | null } {
  const nesting = new JsonNesting(limit);
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += size) nesting.feed(bytes.subarray(i, i + size));
  return { at: nesting.tooDeepAt, path: nesting.tooDeepPath };
}

test('the path of the value nested past the limit, as the checks after parsing name it', (t) => {
  const cases: [string, number, string, string][] = [
    ['{"a":{"b":{"c":{}}}}', 3, '{}}}}', 'a.b.c'],
    ['{"x":1,"hints":[0,"[{",{"k":"}",  "deep":[[]]}]}', 4, '[]]}]}', 'hints[2].deep[0]'],
    ['[[1,2],[3,[[]]]]', 3, '[]]]]', '[1][1][0]'],
    ['{"a\\"b\\u00e9":{"c":[{}]}}', 3, '{}]}}', 'a"bé.c[0]'],
  ];
  for (const [text, limit, from, path] of cases) t.deepEqual(scan(text, limit), { at: text.lastIndexOf(from), path }, text);
});

test('within the limit, brackets in strings and keys do not count', (t) => {
  t.deepEqual(scan('{"[[[[": "{{{{", "a": [[["]]]]"]]]}', 4), { at: null, path: null });
  t.deepEqual(scan('{"a":{"b":{}}, "c":{"d":{}}}', 3), { at: null, path: null });
});
