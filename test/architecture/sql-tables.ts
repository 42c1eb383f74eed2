import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The tables a TypeScript file's SQL names: knex builders (`db('t')`, `.from('t')`, `.join('t as x', …)`,
 * `'t.column'`), raw SQL (`FROM t`, `JOIN t`, `INTO t`, `UPDATE t`, `TABLE t`, upper case as the
 * code writes it), and table names chosen at run time (`table: 't'`, `const table = … 't'`, `trx(c ? 't' : 'u')`).
 * Only names in `known` count, so route paths and plugin names that happen to match are not mistaken
 * for SQL unless they stand in one of those places. Comments are ignored.
 */
export function tablesNamed(source: string, known: ReadonlySet<string>): Set<string> {
  const code = stripComments(source);
  const found = new Set<string>();
  const add = (name: string | undefined) => {
    if (name && known.has(name)) found.add(name);
  };
  const q = `['"\`]`;
  const name = '([a-z_][a-z0-9_]*)';
  const patterns = [
    // a knex builder called on a table: db('t'), trx('t as x'), this.db('t')
    new RegExp(`\\b(?:db|trx|tx|knex|conn|database)\\s*\\(\\s*${q}${name}(?:\\s+as\\s+\\w+)?${q}`, 'g'),
    // builder methods that take a table
    new RegExp(
      `\\.(?:from|into|table|join|leftJoin|rightJoin|innerJoin|leftOuterJoin|rightOuterJoin|fullOuterJoin|crossJoin|hasTable)\\s*\\(\\s*${q}${name}(?:\\s+as\\s+\\w+)?${q}`,
      'g',
    ),
    // a qualified column as an argument, key or default: ('t.column', …), { 't.column': … }, ['t.*'], c = 't.id'
    new RegExp(`(?<=[(,{\\[=]\\s*)${q}${name}\\.(?:[a-z_][a-z0-9_]*|\\*)${q}`, 'g'),
    // raw SQL
    new RegExp(`\\b(?:FROM|JOIN|INTO|UPDATE|TABLE|ONLY)\\s+${name}\\b`, 'g'),
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) add(m[1]);
  // a builder whose table is chosen in place: trx(kind === 'org' ? 'orgs' : 'projects')
  for (const m of code.matchAll(/\b(?:db|trx|tx|knex|conn|database)\s*\(([^()]*\?[^()]*)\)/g)) {
    for (const s of m[1].matchAll(/['"`]([a-z_][a-z0-9_]*)['"`]/g)) add(s[1]);
  }
  // a table name held in a variable or property whose name says so: table: 't', const table = x ? 't' : 'u'
  for (const m of code.matchAll(/\b\w*[tT]able\w*\s*[:=](?!=)([^;\n]*)/g)) {
    for (const s of m[1].matchAll(/['"`]([a-z_][a-z0-9_]*)['"`]/g)) add(s[1]);
  }
  return found;
}

/** Drops // and /* *\/ comments, keeping string and template literals intact. */
export function stripComments(source: string): string {
  let out = '';
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      i = end < 0 ? source.length : end + 2;
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < source.length && source[j] !== c) j += source[j] === '\\' ? 2 : 1;
      out += source.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Every .ts and .tsx file under dir, relative to root, with forward slashes. */
export function tsFiles(root: string, dir: string): string[] {
  const full = path.join(root, dir);
  const out: string[] = [];
  for (const entry of readdirSync(full)) {
    const rel = `${dir}/${entry}`;
    if (statSync(path.join(root, rel)).isDirectory()) out.push(...tsFiles(root, rel));
    else if (/\.tsx?$/.test(entry)) out.push(rel);
  }
  return out.sort();
}

export const readSource = (root: string, rel: string): string => readFileSync(path.join(root, rel), 'utf8');
