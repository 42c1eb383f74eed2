// Shared helpers for the auth tests: real OpenSSH keys and signatures, time checks, row counts.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ExecutionContext } from 'ava';
import type { Kernel } from '../../core/kernel.ts';

const run = promisify(execFile);
export const SSH_KEYGEN = '/usr/bin/ssh-keygen';
export const MINUTE = 60_000;
export const DAY = 86_400_000;

export interface SshKey {
  /** Private key file; the public half is `${file}.pub`. */
  file: string;
  publicLine: string;
  /** As `ssh-keygen -lf` prints it: SHA256:... */
  fingerprint: string;
  comment: string;
}

/** A temporary folder, removed by the returned cleanup. */
export async function tempDir(prefix = 'svc-auth-test-'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** `ssh-keygen -t <type> [-b bits] -N '' -C comment -f <dir>/<name>`. */
export async function makeKey(dir: string, name: string, type: 'ed25519' | 'ecdsa' | 'rsa', bits?: number, comment = `${name}@test`): Promise<SshKey> {
  const file = path.join(dir, name);
  const args = ['-q', '-t', type, ...(bits ? ['-b', String(bits)] : []), '-N', '', '-C', comment, '-f', file];
  await run(SSH_KEYGEN, args);
  const publicLine = (await readFile(`${file}.pub`, 'utf8')).trim();
  const { stdout } = await run(SSH_KEYGEN, ['-lf', `${file}.pub`]);
  return { file, publicLine, fingerprint: stdout.split(' ')[1], comment };
}

let signatures = 0;

/** Signs the exact bytes of `message` (no trailing newline) with `ssh-keygen -Y sign`. */
export async function sshSign(key: SshKey, message: string | Buffer, namespace = 'svc-auth'): Promise<string> {
  const messageFile = `${key.file}.msg-${process.pid}-${++signatures}`;
  await writeFile(messageFile, message);
  await run(SSH_KEYGEN, ['-Y', 'sign', '-f', key.file, '-n', namespace, messageFile]);
  const signature = await readFile(`${messageFile}.sig`, 'utf8');
  await rm(messageFile, { force: true });
  await rm(`${messageFile}.sig`, { force: true });
  return signature;
}

/** Asserts an ISO timestamp lies within [from, to] (epoch ms), with `slackMs` either side. */
export function within(t: ExecutionContext, iso: unknown, from: number, to: number, slackMs = 2_000): void {
  t.is(typeof iso, 'string', `expected an ISO timestamp, got ${JSON.stringify(iso)}`);
  const at = Date.parse(iso as string);
  t.false(Number.isNaN(at), `not a timestamp: ${iso}`);
  t.true(at >= from - slackMs && at <= to + slackMs, `${iso} is not within [${new Date(from).toISOString()}, ${new Date(to).toISOString()}]`);
}

/** Row counts of the tables the auth routes write, to prove a failed request wrote nothing. */
export async function authRows(kernel: Kernel): Promise<Record<string, number>> {
  const tables = ['users', 'user_keys', 'org_members', 'project_members', 'signing_keys'];
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const row = (await kernel.db(table).count({ n: '*' }).first()) as { n: string | number };
    counts[table] = Number(row.n);
  }
  const admins = (await kernel.db('users').where({ is_admin: true }).count({ n: '*' }).first()) as { n: string | number };
  counts.admins = Number(admins.n);
  return counts;
}

/** The header of a JWT, decoded (no verification). */
export function jwtHeader(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString('utf8'));
}

/** The claims of a JWT, decoded (no verification). */
export function jwtClaims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
}
