import test from 'ava';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { as, bootstrapAdmin, startTestServer } from '../support/server.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { Sealer } from '../../core/crypto/sealer.ts';
import { SIGNING_KEY_SEALS } from '../../core/auth/signing-keys.ts';
import { oauthSealContext } from '../../plugins/harnesses/oauth-repository.ts';
import { svc, show } from './cli-run.ts';

let database: TestDatabase;
let home: string;

test.before(async () => {
  database = await createTestDatabase();
  home = await mkdtemp(join(tmpdir(), 'svc-rekey-'));
});
test.after.always(async () => {
  await database?.drop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('svc secrets rekey moves every sealed value to the new key in one transaction', async (t) => {
  // startTestServer derives the master key from the database URL; a later server gets the new one.
  const oldKey = createHash('sha256').update(database.url).digest('hex');
  const newKey = randomBytes(32).toString('hex');
  const oldFile = join(home, 'old.key');
  const newFile = join(home, 'new.key');
  await writeFile(oldFile, `${oldKey}\n`);
  await writeFile(newFile, Buffer.from(newKey, 'hex').toString('base64'));

  const first = await startTestServer({ database });
  const { token, userId } = await bootstrapAdmin(first.server);
  const api = as(first.server, token);
  const orgId = (await api.post('/orgs', { name: 'Rekeyed' })).body.id;
  for (const [base, value] of [
    [`/orgs/${orgId}/secrets`, 'org-value'],
    [`/users/${userId}/secrets`, 'user-value'],
    ['/system/secrets', 'system-value'],
  ]) {
    t.is((await api.post(base, { name: 'ROTATED', value })).statusCode, 201);
  }
  const webhookSecret = 'webhook-secret-rotated-0123';
  const webhook = await api.post(`/orgs/${orgId}/webhooks`, { url: 'http://192.0.2.1/hook', events: ['*'], secret: webhookSecret });
  t.is(webhook.statusCode, 201);
  await first.stop();

  const env = { DATABASE_URL: database.url };
  const args = ['secrets', 'rekey', '--old-key-file', oldFile, '--new-key-file', newFile];

  // A value that opens with neither key aborts the run and changes nothing.
  const { default: knex } = await import('knex');
  const direct = knex({ client: 'pg', connection: database.url });
  try {
    const stranger = new Sealer(randomBytes(32));
    const before = await direct('secrets').orderBy('id').pluck('value_enc');
    await direct('secrets')
      .where({ scope: 'system' })
      .update({ value_enc: stranger.seal('x', `secret:system::ROTATED`) });
    const failed = await svc(home, args, env);
    t.is(failed.code, 1, show(args, failed));
    t.regex(failed.stderr, /^svc: rekey failed, nothing was changed: secrets id=\d+: the value opens with neither the old nor the new key\n/);
    const during = await direct('secrets').orderBy('id').pluck('value_enc');
    t.deepEqual(during.slice(0, 2), before.slice(0, 2));
    await direct('secrets').where({ scope: 'system' }).update({ value_enc: before[2] });

    // A harness OAuth login svc refreshed (plugins/harnesses/oauth.ts): both of its tokens sealed.
    const seed = 'a'.repeat(64);
    await direct('harness_oauth_tokens').insert({
      family: 'anthropic',
      seed_hash: seed,
      access_token_sealed: new Sealer(Buffer.from(oldKey, 'hex')).seal('at-rotated', oauthSealContext('access', seed)),
      refresh_token_sealed: new Sealer(Buffer.from(oldKey, 'hex')).seal('rt-rotated', oauthSealContext('refresh', seed)),
      expires_at: new Date(Date.now() + 3600_000),
    });

    const ok = await svc(home, args, env);
    t.is(ok.code, 0, show(args, ok));
    t.regex(
      ok.stdout,
      /^TABLE +COLUMN +REKEYED +UNCHANGED\nsigning_keys +\w+ +1 +0\nsecrets +value_enc +3 +0\nwebhook_subscriptions +secret_enc +1 +0\nharness_oauth_tokens +access_token_sealed +1 +0\nharness_oauth_tokens +refresh_token_sealed +1 +0\n/,
    );

    // Running it again finds everything already under the new key.
    const again = await svc(home, [...args, '--json'], env);
    t.is(again.code, 0, show(args, again));
    t.deepEqual(JSON.parse(again.stdout), {
      tables: [
        { table: 'signing_keys', column: SIGNING_KEY_SEALS.column, rekeyed: 0, unchanged: 1 },
        { table: 'secrets', column: 'value_enc', rekeyed: 0, unchanged: 3 },
        { table: 'webhook_subscriptions', column: 'secret_enc', rekeyed: 0, unchanged: 1 },
        { table: 'harness_oauth_tokens', column: 'access_token_sealed', rekeyed: 0, unchanged: 1 },
        { table: 'harness_oauth_tokens', column: 'refresh_token_sealed', rekeyed: 0, unchanged: 1 },
      ],
    });
    const login = await direct('harness_oauth_tokens').where({ seed_hash: seed }).first();
    t.is(new Sealer(Buffer.from(newKey, 'hex')).open(login.refresh_token_sealed, oauthSealContext('refresh', seed)), 'rt-rotated');
    const sealed = await direct('webhook_subscriptions').where({ id: webhook.body.id }).first('secret_enc');
    t.is(new Sealer(Buffer.from(newKey, 'hex')).open(sealed.secret_enc, `webhook-secret:${webhook.body.id}`), webhookSecret);

    const old = new Sealer(Buffer.from(oldKey, 'hex'));
    for (const row of await direct('secrets')) t.throws(() => old.open(row.value_enc, `secret:${row.scope}:${row.org_id ?? row.user_id ?? ''}:ROTATED`));
  } finally {
    await direct.destroy();
  }

  // A server on the new key opens its signing key (it would not start otherwise) and every secret.
  const second = await startTestServer({ database, overrides: { secrets: { master_key: newKey } } });
  try {
    t.is((await as(second.server, token).get('/auth/me')).statusCode, 200, 'tokens signed before the rotation still verify');
    const resolver = second.kernel.container.resolve(SecretResolverToken);
    t.is(await resolver.resolve('ROTATED', { orgId }), 'org-value');
    t.is(await resolver.resolve('ROTATED', { userId }), 'user-value');
    t.is(await resolver.resolve('ROTATED', { internal: true }), 'system-value', 'read as svc itself: it is not shared with jobs');
  } finally {
    await second.stop();
  }
});

test.serial('rekey usage errors', async (t) => {
  const key = join(home, 'same.key');
  await writeFile(key, randomBytes(32).toString('hex'));
  const same = await svc(home, ['secrets', 'rekey', '--old-key-file', key, '--new-key-file', key], { DATABASE_URL: database.url });
  t.is(same.code, 1);
  t.regex(same.stderr, /the old and the new key are the same/);
  const noDb = await svc(home, ['secrets', 'rekey', '--old-key-file', key, '--new-key-file', key], {});
  t.is(noDb.code, 2);
  t.regex(noDb.stderr, /no database: pass --database-url or set DATABASE_URL/);
  const bad = join(home, 'bad.key');
  await writeFile(bad, 'short');
  const badKey = await svc(home, ['secrets', 'rekey', '--old-key-file', bad, '--new-key-file', key], { DATABASE_URL: database.url });
  t.is(badKey.code, 1);
  t.regex(badKey.stderr, /--old-key-file .*bad\.key: a master key is 32 bytes/);
  const missing = await svc(home, ['secrets', 'rekey', '--new-key-file', key], {});
  t.is(missing.code, 2);
  t.regex(missing.stderr, /--old-key-file is required/);
});
