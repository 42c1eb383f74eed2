import test from 'ava';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { TABLE_OWNERS } from '../../core/db/table-owners.ts';
import { readSource, tablesNamed, tsFiles } from './sql-tables.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KNOWN = new Set(Object.keys(TABLE_OWNERS));
const ownerOf = (table: string) => (TABLE_OWNERS as Record<string, string>)[table];

/**
 * The kernel's authentication and authorization read what they decide on directly, in one
 * statement per request (batched): the user behind a token, a service-account or job token's row,
 * memberships and role bindings. The event spine inserts events for every domain. Nothing else in
 * core/ names a domain's table.
 */
const KERNEL_READS: Record<string, string[]> = {
  'core/auth/access.ts': ['access_bindings', 'access_group_members', 'orgs', 'projects'],
  'core/auth/machine-tokens.ts': ['job_attempts', 'service_account_tokens'],
  'core/auth/memberships.ts': ['orgs', 'projects', 'users'],
  'core/auth/nostr-request.ts': ['nostr_seen_events', 'user_nostr_keys', 'users'],
  'core/auth/resolver.ts': ['access_bindings', 'access_group_members', 'access_roles', 'orgs', 'projects'],
  'core/auth/tokens.ts': ['users'],
  'core/events/emit.ts': ['events'],
};

/**
 * Plugins that still read another domain's table. Each entry is a file and the foreign tables it
 * names; the test fails when an entry is no longer true, so this list only shrinks.
 */
const KNOWN_VIOLATIONS: Record<string, string[]> = {};

/** Which domain a source file belongs to: plugins/<name>/…, or core. */
function domainOf(file: string): string {
  return file.startsWith('plugins/') ? file.split('/')[1] : 'core';
}

function foreignTables(file: string): string[] {
  const domain = domainOf(file);
  return [...tablesNamed(readSource(ROOT, file), KNOWN)].filter((t) => ownerOf(t) !== domain).sort();
}

test('every table a migration creates has an owner, and every owner exists', (t) => {
  const created = new Set<string>();
  for (const file of readdirSync(`${ROOT}/migrations`).filter((f) => /^\d+_.+\.ts$/.test(f))) {
    for (const m of readSource(ROOT, `migrations/${file}`).matchAll(/createTable\(\s*'([a-z_0-9]+)'/g)) created.add(m[1]);
  }
  t.deepEqual(
    [...created].filter((table) => !KNOWN.has(table)),
    [],
    'tables without an owner in core/db/table-owners.ts',
  );
  t.deepEqual(
    [...KNOWN].filter((table) => !created.has(table)),
    [],
    'owners of tables no migration creates',
  );
  const plugins = new Set(readdirSync(`${ROOT}/plugins`));
  t.deepEqual(
    [...new Set(Object.values(TABLE_OWNERS))].filter((o) => o !== 'core' && !plugins.has(o)),
    [],
  );
});

test("no plugin's SQL names a table another domain owns (beyond the listed ones)", (t) => {
  const found: Record<string, string[]> = {};
  for (const file of tsFiles(ROOT, 'plugins')) {
    const foreign = foreignTables(file);
    if (foreign.length) found[file] = foreign;
  }
  const unexpected = Object.entries(found).filter(([file, tables]) => tables.some((x) => !(KNOWN_VIOLATIONS[file] ?? []).includes(x)));
  t.deepEqual(Object.fromEntries(unexpected), {}, 'ask the owning domain through a port (core/ports/directory.ts) instead');
  t.deepEqual(found, KNOWN_VIOLATIONS, 'a listed violation is gone: remove it from KNOWN_VIOLATIONS');
});

test('the kernel names only its own tables, and the reads listed for authentication and the event spine', (t) => {
  const found: Record<string, string[]> = {};
  for (const file of tsFiles(ROOT, 'core')) {
    const foreign = foreignTables(file);
    if (foreign.length) found[file] = foreign;
  }
  t.deepEqual(found, KERNEL_READS);
});

test('shared domain code, adapters, harnesses and the CLI name no table at all', (t) => {
  for (const dir of ['domain', 'adapters', 'harnesses', 'cli']) {
    for (const file of tsFiles(ROOT, dir)) t.deepEqual([...tablesNamed(readSource(ROOT, file), KNOWN)], [], file);
  }
});

test('the scanner sees knex builders, qualified columns, raw SQL and table variables, and skips comments and route paths', (t) => {
  const seen = (source: string) => [...tablesNamed(source, KNOWN)].sort();
  t.deepEqual(seen("db('projects').where({ id })"), ['projects']);
  t.deepEqual(seen("this.db('chat_routes as r').join('projects as p', 'p.id', 'r.project_id')"), ['chat_routes', 'projects']);
  t.deepEqual(seen("q.select('users.email')"), ['users']);
  t.deepEqual(seen('trx.raw(`SELECT 1 FROM events e JOIN projects p ON p.id = e.project_id`)'), ['events', 'projects']);
  t.deepEqual(seen("const table = kind === 'org' ? 'orgs' : 'projects';"), ['orgs', 'projects']);
  t.deepEqual(seen("trx(scope.kind === 'org' ? 'orgs' : 'projects').forUpdate()"), ['orgs', 'projects']);
  t.deepEqual(seen("// db('projects')\n/* FROM orgs */ const path = '/projects/{id}'; dependencies: ['orgs']"), []);
});
