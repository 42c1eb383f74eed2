import test from 'ava';
import { maskSecrets } from '../../plugins/secrets/mask.ts';

test('masks every exact occurrence of each known value', (t) => {
  t.is(maskSecrets('token=abcd1234 again abcd1234.', ['abcd1234']), 'token=*** again ***.');
});

test('longest values first: a value containing another is masked whole', (t) => {
  t.is(maskSecrets('pw=hunter2hunter2 short=hunter2', ['hunter2', 'hunter2hunter2']), 'pw=*** short=***');
});

test('empty and very short values are skipped', (t) => {
  t.is(maskSecrets('a b abc abcd', ['', 'a', 'abc']), 'a b abc abcd');
  t.is(maskSecrets('a b abc abcd', ['abcd']), 'a b abc ***');
});

test('regular-expression characters in values are literal', (t) => {
  t.is(maskSecrets('x=a.b*c+d(e) y=aXbbc', ['a.b*c+d(e)', '$(rm)']), 'x=*** y=aXbbc');
  t.is(maskSecrets('line1\nkey-$(rm)\\n', ['$(rm)\\n']), 'line1\nkey-***');
});

test('multi-line values and no values', (t) => {
  const key = '-----BEGIN KEY-----\nAAAA\n-----END KEY-----';
  t.is(maskSecrets(`before\n${key}\nafter`, [key]), 'before\n***\nafter');
  t.is(maskSecrets('unchanged', []), 'unchanged');
  t.is(maskSecrets('', ['abcd']), '');
});
