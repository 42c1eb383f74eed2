import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { as, type Reply } from '../support/server.ts';
import { assertError, assertPage, memberOf, newUser, setup, type Ctx, type User } from '../orgs/helpers.ts';
import { MAX_ATTACHMENT_BYTES, decodeBase64 } from '../../plugins/jobs/attachments/attachments.ts';

let ctx: Ctx;
let admin: ReturnType<typeof as>;
let jobA = '';
let jobB = '';
let memberA: User;
let memberB: User;
let stranger: User;

const META_FIELDS = ['created_at', 'id', 'job_id', 'mime_type', 'name', 'size_bytes'];
const ATT_ID = /^att_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
const MISSING_JOB = 'nojob-0badc0de';

test.before(async () => {
  ctx = await setup();
  admin = as(ctx.srv.server, ctx.adminToken);
  const orgA = (await admin.post('/orgs', { name: 'Attach A' })).body.id;
  const orgB = (await admin.post('/orgs', { name: 'Attach B' })).body.id;
  const projA = (await admin.post('/projects', { org_id: orgA, name: 'A', slug: 'atta' })).body.id;
  const projB = (await admin.post('/projects', { org_id: orgB, name: 'B', slug: 'attb' })).body.id;
  jobA = (await admin.post(`/projects/${projA}/jobs`, { description: 'job with files' })).body.id;
  jobB = (await admin.post(`/projects/${projB}/jobs`, { description: 'job of org B' })).body.id;
  memberA = await memberOf(ctx, orgA, 'att-member-a', 'member');
  memberB = await memberOf(ctx, orgB, 'att-member-b', 'member');
  stranger = await newUser(ctx, 'att-stranger');
});
test.after.always(async () => {
  await ctx?.srv.stop();
});

const path = (job: string, name?: string, content = false) =>
  `/jobs/${job}/attachments${name === undefined ? '' : `/${encodeURIComponent(name)}`}${content ? '/content' : ''}`;
const countFor = async (job: string) => Number((await ctx.srv.kernel.db('job_attachments').where({ job_id: job }).count({ n: '*' }).first())!.n);

/** The raw download, bytes and headers, as `token`. */
async function download(job: string, name: string, token = ctx.adminToken) {
  const res = await ctx.srv.server.inject({ method: 'GET', url: path(job, name, true), headers: { authorization: `Bearer ${token}` } });
  return { status: res.statusCode, bytes: res.rawPayload, headers: res.headers };
}

function assertMeta(t: ExecutionContext, res: Reply, expected: { name: string; mime_type: string | null; size_bytes: number; job_id?: string }) {
  t.deepEqual(Object.keys(res.body).sort(), META_FIELDS);
  t.regex(res.body.id, ATT_ID);
  t.like(res.body, { job_id: jobA, ...expected });
  t.false(Number.isNaN(Date.parse(res.body.created_at)));
}

test.serial('utf8 text round trips byte for byte with its stored Content-Type; metadata never carries the content', async (t) => {
  const text = '# Notes — ünïcødé ✓\r\nline two\ttabbed\n\u0000nul and emoji 🚀\n';
  const created = await admin.post(path(jobA), { name: 'notes.md', mime_type: 'text/markdown', content: text });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  assertMeta(t, created, { name: 'notes.md', mime_type: 'text/markdown', size_bytes: Buffer.byteLength(text, 'utf8') });

  t.deepEqual((await admin.get(path(jobA, 'notes.md'))).body, created.body);
  const file = await download(jobA, 'notes.md');
  t.is(file.status, 200);
  t.true(file.bytes.equals(Buffer.from(text, 'utf8')));
  t.is(file.headers['content-type'], 'text/markdown');
  t.is(Number(file.headers['content-length']), Buffer.byteLength(text, 'utf8'));
  t.is(file.headers['x-content-type-options'], 'nosniff');
  t.is(file.headers['content-disposition'], `attachment; filename="notes.md"; filename*=UTF-8''notes.md`);
});

test.serial('binary content (base64) round trips byte-exact; no MIME type serves application/octet-stream', async (t) => {
  const bytes = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(70_001)]);
  const wrapped = bytes.toString('base64').replace(/.{76}/g, '$&\n'); // as `base64` prints it
  const created = await admin.post(path(jobA), { name: 'blob.bin', content: wrapped, encoding: 'base64' });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  assertMeta(t, created, { name: 'blob.bin', mime_type: null, size_bytes: bytes.length });
  const file = await download(jobA, 'blob.bin');
  t.true(file.bytes.equals(bytes));
  t.is(file.headers['content-type'], 'application/octet-stream');
  t.is(Number(file.headers['content-length']), bytes.length);

  // An empty file, a unicode name with spaces, and a MIME type with a parameter.
  const name = 'résumé final (v2).txt';
  const empty = await admin.post(path(jobA), { name, mime_type: 'text/plain; charset=iso-8859-1', content: '' });
  t.is(empty.statusCode, 201, JSON.stringify(empty.body));
  t.is(empty.body.size_bytes, 0);
  const got = await download(jobA, name);
  t.is(got.status, 200);
  t.is(got.bytes.length, 0);
  t.is(got.headers['content-type'], 'text/plain; charset=iso-8859-1');
  t.is(got.headers['content-disposition'], `attachment; filename="r_sum_ final (v2).txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20final%20%28v2%29.txt`);
});

test.serial('the list is paginated metadata, newest first', async (t) => {
  const job = (await admin.post(`/projects/${(await admin.get(`/jobs/${jobA}`)).body.project_id}/jobs`, { description: 'list' })).body.id;
  for (const n of ['one', 'two', 'three']) t.is((await admin.post(path(job), { name: `${n}.txt`, content: n })).statusCode, 201);
  const first = await admin.get(`${path(job)}?limit=2`);
  t.deepEqual(assertPage(t, first, { limit: 2, offset: 0, count: 2, total: 3, has_more: true }, 'name'), ['three.txt', 'two.txt']);
  for (const item of first.body.data) t.deepEqual(Object.keys(item).sort(), META_FIELDS);
  t.deepEqual(assertPage(t, await admin.get(`${path(job)}?limit=2&offset=2`), { limit: 2, offset: 0 + 2, count: 1, total: 3, has_more: false }, 'name'), [
    'one.txt',
  ]);
  t.deepEqual(assertPage(t, await admin.get(`${path(job)}?offset=5`), { limit: 10, offset: 5, count: 0, total: 3, has_more: false }, 'name'), []);
  assertError(t, await admin.get(`${path(job)}?limit=0`), 400, /"limit" must be greater than or equal to 1/);
  assertError(t, await admin.get(`${path(job)}?include_deleted=true`), 400, '"include_deleted" is not allowed');
});

test.serial('content over 5 MiB after decoding is 413 with a clear message, and nothing is written', async (t) => {
  const before = await countFor(jobA);
  const over = Buffer.alloc(MAX_ATTACHMENT_BYTES + 1, 7);
  assertError(
    t,
    await admin.post(path(jobA), { name: 'big.bin', content: over.toString('base64'), encoding: 'base64' }),
    413,
    `attachment content is ${MAX_ATTACHMENT_BYTES + 1} bytes; the limit is ${MAX_ATTACHMENT_BYTES} bytes (5 MiB) after decoding`,
  );
  // utf8: a short string whose UTF-8 bytes pass the limit (3 bytes per character).
  assertError(
    t,
    await admin.post(path(jobA), { name: 'big.txt', content: '€'.repeat(MAX_ATTACHMENT_BYTES / 3 + 1) }),
    413,
    /the limit is 5242880 bytes \(5 MiB\)/,
  );
  // A body the route refuses while reading it.
  const res = await ctx.srv.server.inject({
    method: 'POST',
    url: path(jobA),
    headers: { authorization: `Bearer ${ctx.adminToken}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ name: 'huge.txt', content: 'x'.repeat(9 * 1024 * 1024) }),
  });
  assertError(
    t,
    { statusCode: res.statusCode, body: JSON.parse(res.payload), headers: res.headers },
    413,
    /^request body is larger than 8388608 bytes; attachment content is limited to 5242880 bytes \(5 MiB\)/,
  );
  t.is(await countFor(jobA), before);
  t.is(
    await ctx.srv.kernel
      .db('job_attachments')
      .whereIn('name', ['big.bin', 'big.txt', 'huge.txt'])
      .count({ n: '*' })
      .first()
      .then((r) => Number(r!.n)),
    0,
  );

  // Exactly the limit is accepted.
  const exact = await admin.post(path(jobA), { name: 'exact.bin', content: Buffer.alloc(MAX_ATTACHMENT_BYTES, 1).toString('base64'), encoding: 'base64' });
  t.is(exact.statusCode, 201, JSON.stringify(exact.body));
  t.is(exact.body.size_bytes, MAX_ATTACHMENT_BYTES);
  t.is((await admin.delete(path(jobA, 'exact.bin'))).statusCode, 204);
});

test.serial('bad names, encodings, MIME types and base64 are 400 naming the problem, and nothing is written', async (t) => {
  const before = await countFor(jobA);
  const bad = async (payload: Record<string, unknown>, message: string | RegExp) => assertError(t, await admin.post(path(jobA), payload), 400, message);
  await bad({ name: '', content: 'x' }, '"name" is not allowed to be empty');
  await bad({ name: 'x'.repeat(256), content: 'x' }, '"name" length must be less than or equal to 255 characters long');
  await bad({ name: 'dir/file.txt', content: 'x' }, '"name" must not contain "/"');
  await bad({ name: '..', content: 'x' }, '"name" must not contain ".." or be "."');
  await bad({ name: 'a..b', content: 'x' }, '"name" must not contain ".." or be "."');
  await bad({ name: '.', content: 'x' }, '"name" must not contain ".." or be "."');
  await bad({ name: 'tab\there', content: 'x' }, '"name" must not contain control characters');
  await bad({ name: 'nul\u0000', content: 'x' }, '"name" must not contain control characters');
  await bad({ name: 'ok.txt' }, '"content" is required');
  await bad({ name: 'ok.txt', content: 5 }, '"content" must be a string');
  await bad({ name: 'ok.txt', content: 'x', encoding: 'hex' }, '"encoding" must be one of [utf8, base64]');
  await bad(
    { name: 'ok.txt', content: 'x', mime_type: 'text/plain\r\nx-evil: 1' },
    /^"mime_type" with value .* fails to match the type\/subtype\[; parameter=value\] pattern$/s,
  );
  await bad({ name: 'ok.txt', content: 'x', mime_type: 'plain' }, /fails to match the type\/subtype/);
  await bad({ name: 'ok.txt', content: 'x', size_bytes: 1 }, '"size_bytes" is not allowed');
  await bad({ name: 'ok.txt', content: 'not base64!', encoding: 'base64' }, '"content" is not valid base64 (encoding "base64")');
  await bad({ name: 'ok.txt', content: 'QUJD=', encoding: 'base64' }, '"content" is not valid base64 (encoding "base64")');
  const raw = (type: string, payload: string) =>
    ctx.srv.server.inject({ method: 'POST', url: path(jobA), headers: { authorization: `Bearer ${ctx.adminToken}`, 'content-type': type }, payload });
  t.is((await raw('application/json', '{"name": "x.txt", "content": ')).statusCode, 400, 'malformed JSON');
  t.is((await raw('text/plain', 'just text')).statusCode, 415, 'only JSON bodies');
  assertError(t, await admin.get(path(jobA, 'a..b')), 400, '"name" must not contain ".." or be "."');
  assertError(t, await admin.get(path('Not-A-Job')), 400, /"job_id" with value "Not-A-Job" fails to match/);
  t.is(await countFor(jobA), before);
});

test.serial('base64 decoding is strict', (t) => {
  t.deepEqual(decodeBase64('QUJD'), Buffer.from('ABC'));
  t.deepEqual(decodeBase64('QUI='), Buffer.from('AB'));
  t.deepEqual(decodeBase64('QUI'), Buffer.from('AB'));
  t.deepEqual(decodeBase64('QQ=='), Buffer.from('A'));
  t.deepEqual(decodeBase64(''), Buffer.alloc(0));
  for (const s of ['Q', 'QQ=', 'Q===', 'QU=I', 'QUJD====', 'QUJD-_', 'QUJ\u00e9']) t.is(decodeBase64(s), null, s);
});

test.serial('the same name again is 409 and leaves the first file alone; another job may use the name', async (t) => {
  t.is((await admin.post(path(jobA), { name: 'dup.txt', content: 'first' })).statusCode, 201);
  assertError(t, await admin.post(path(jobA), { name: 'dup.txt', content: 'second' }), 409, `job ${jobA} already has an attachment named "dup.txt"`);
  t.is((await download(jobA, 'dup.txt')).bytes.toString(), 'first');
  t.is(
    await ctx.srv.kernel
      .db('job_attachments')
      .where({ job_id: jobA, name: 'dup.txt' })
      .count({ n: '*' })
      .first()
      .then((r) => Number(r!.n)),
    1,
  );
  t.is((await admin.post(path(jobB), { name: 'dup.txt', content: 'other job' })).statusCode, 201);
});

test.serial('unknown jobs and attachments are 404; delete is 204 and then 404', async (t) => {
  const jobNf = `job ${MISSING_JOB} not found`;
  assertError(t, await admin.post(path(MISSING_JOB), { name: 'a.txt', content: 'x' }), 404, jobNf);
  assertError(t, await admin.get(path(MISSING_JOB)), 404, jobNf);
  assertError(t, await admin.get(path(MISSING_JOB, 'a.txt')), 404, jobNf);
  assertError(t, await admin.get(path(MISSING_JOB, 'a.txt', true)), 404, jobNf);
  assertError(t, await admin.delete(path(MISSING_JOB, 'a.txt')), 404, jobNf);
  const fileNf = `attachment "nope.txt" not found on job ${jobA}`;
  assertError(t, await admin.get(path(jobA, 'nope.txt')), 404, fileNf);
  assertError(t, await admin.get(path(jobA, 'nope.txt', true)), 404, fileNf);
  assertError(t, await admin.delete(path(jobA, 'nope.txt')), 404, fileNf);

  t.is((await admin.post(path(jobA), { name: 'gone.txt', content: 'bye' })).statusCode, 201);
  const removed = await admin.delete(path(jobA, 'gone.txt'));
  t.is(removed.statusCode, 204);
  t.is(removed.body, null);
  assertError(t, await admin.get(path(jobA, 'gone.txt')), 404, `attachment "gone.txt" not found on job ${jobA}`);
  assertError(t, await admin.delete(path(jobA, 'gone.txt')), 404, `attachment "gone.txt" not found on job ${jobA}`);
  t.false((await admin.get(`${path(jobA)}?limit=100`)).body.data.some((a: { name: string }) => a.name === 'gone.txt'));
});

test.serial('a member of the org reads and writes; other orgs and non-members get 404 and change nothing', async (t) => {
  const m = memberA.api;
  t.is((await m.post(path(jobA), { name: 'member.txt', content: 'by a member' })).statusCode, 201);
  t.true((await m.get(`${path(jobA)}?limit=100`)).body.data.some((a: { name: string }) => a.name === 'member.txt'));
  t.is((await m.get(path(jobA, 'member.txt'))).statusCode, 200);
  t.is((await download(jobA, 'member.txt', memberA.token)).bytes.toString(), 'by a member');
  const row = await ctx.srv.kernel.db('job_attachments').where({ job_id: jobA, name: 'member.txt' }).first('created_by');
  t.is(row.created_by, memberA.id);

  const before = { a: await countFor(jobA), b: await countFor(jobB) };
  for (const [who, job] of [
    [memberB, jobA],
    [stranger, jobA],
    [memberA, jobB],
  ] as const) {
    const nf = `job ${job} not found`;
    assertError(t, await who.api.post(path(job), { name: 'intruder.txt', content: 'x' }), 404, nf);
    assertError(t, await who.api.get(path(job)), 404, nf);
    assertError(t, await who.api.get(path(job, 'member.txt')), 404, nf);
    assertError(t, await who.api.get(path(job, 'dup.txt', true)), 404, nf);
    assertError(t, await who.api.delete(path(job, 'dup.txt')), 404, nf);
  }
  t.deepEqual({ a: await countFor(jobA), b: await countFor(jobB) }, before);
  t.is((await m.delete(path(jobA, 'member.txt'))).statusCode, 204);

  const anonymous = as(ctx.srv.server);
  t.is((await anonymous.get(path(jobA))).statusCode, 401);
  t.is((await anonymous.post(path(jobA), { name: 'anon.txt', content: 'x' })).statusCode, 401);
});
