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

const secret = 's3cr3t/value+with space&more';

test('the base64 encodings of a value are masked: exact, URL-safe, and inside a longer encoded text at every offset', (t) => {
  const b64 = Buffer.from(secret).toString('base64');
  t.is(maskSecrets(`auth=${b64}.`, [secret]), 'auth=***.');
  t.is(maskSecrets(`auth=${b64.replace(/\+/g, '-').replace(/\//g, '_')}`, [secret]), 'auth=***');
  for (const prefix of ['', 'u', 'us', 'user:']) {
    const encoded = Buffer.from(`${prefix}${secret}@host`).toString('base64');
    const masked = maskSecrets(`Authorization: Basic ${encoded}`, [secret]);
    t.true(masked.includes('***'), `prefix ${JSON.stringify(prefix)}: ${masked}`);
    const left = masked.replace('Authorization: Basic ', '').split('***').join('');
    const core = Buffer.from(secret).toString('base64').length - 4;
    t.true(left.length <= encoded.length - core, `only the neighbouring characters stay (prefix ${JSON.stringify(prefix)}): ${masked}`);
    t.false(Buffer.from(left, 'base64').toString('latin1').includes('s3cr'), masked);
  }
});

test('the URL-encodings of a value are masked (percent-encoded in either case, and as a form field)', (t) => {
  const encoded = encodeURIComponent(secret);
  t.is(maskSecrets(`GET /cb?token=${encoded}&x=1`, [secret]), 'GET /cb?token=***&x=1');
  t.is(maskSecrets(`token=${encoded.replace(/%[0-9A-F]{2}/g, (p) => p.toLowerCase())}`, [secret]), 'token=***');
  t.is(maskSecrets(`token=${encoded.replace(/%20/g, '+')}`, [secret]), 'token=***');
});

test('the hex encodings of a value are masked, in either case', (t) => {
  const hex = Buffer.from(secret).toString('hex');
  t.is(maskSecrets(`dump ${hex} end`, [secret]), 'dump *** end');
  t.is(maskSecrets(`DUMP ${hex.toUpperCase()}`, [secret]), 'DUMP ***');
});

test('encodings of other text are left alone', (t) => {
  const other = Buffer.from('nothing secret here').toString('base64');
  t.is(maskSecrets(`x=${other} y=${encodeURIComponent('a b')}`, [secret]), `x=${other} y=a%20b`);
});
