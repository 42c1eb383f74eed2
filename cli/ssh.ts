import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError } from './errors.ts';

/** Private keys tried by `svc auth login` when --key is not given, in order. */
export const DEFAULT_PRIVATE_KEYS = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

/** The first default private key that exists under ~/.ssh. */
export function defaultPrivateKey(home: string): string | undefined {
  return DEFAULT_PRIVATE_KEYS.map((name) => join(home, '.ssh', name)).find((path) => existsSync(path));
}

/** ~/.ssh/id_ed25519.pub if it exists: the key `svc auth bootstrap` registers when --key is not given. */
export function defaultPublicKey(home: string): string | undefined {
  const path = join(home, '.ssh', 'id_ed25519.pub');
  return existsSync(path) ? path : undefined;
}

/** Read an OpenSSH public key line (`ssh-ed25519 AAAA... comment`), refusing private keys. */
export async function readPublicKey(path: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read public key ${path}: ${(error as Error).message}`);
  }
  const line = text.trim();
  if (line.includes('PRIVATE KEY')) throw new CliError(`${path} is a private key; pass the public key (${path}.pub)`);
  if (line === '') throw new CliError(`${path} is empty`);
  return line;
}

const keygenBinary = (env: NodeJS.ProcessEnv): string => env.SVC_SSH_KEYGEN || 'ssh-keygen';

/**
 * Sign `message` (its exact UTF-8 bytes, no trailing newline) with `ssh-keygen -Y sign` and return the
 * armored signature. stdin stays attached so ssh-keygen can ask for a key passphrase; a .pub path makes
 * ssh-keygen sign with the matching key in ssh-agent.
 */
export async function signMessage(keyPath: string, namespace: string, message: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (!existsSync(keyPath)) throw new CliError(`SSH key ${keyPath} does not exist`);
  const dir = await mkdtemp(join(tmpdir(), 'svc-sign-'));
  try {
    const file = join(dir, 'nonce');
    await writeFile(file, message, { mode: 0o600 });
    await runKeygen(keygenBinary(env), ['-Y', 'sign', '-f', keyPath, '-n', namespace, file]);
    try {
      return await readFile(`${file}.sig`, 'utf8');
    } catch {
      throw new CliError(`ssh-keygen did not write a signature for ${keyPath}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function runKeygen(binary: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['inherit', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      const why = error.code === 'ENOENT' ? `${binary} not found; install OpenSSH (ssh-keygen 8.1 or later)` : error.message;
      reject(new CliError(`cannot sign the login challenge: ${why}`));
    });
    child.on('close', (code) => {
      if (code === 0) return resolve();
      const detail = stderr
        .trim()
        .split('\n')
        .filter((l) => !/^(Signing file|Write signature)/.test(l))
        .join('; ');
      reject(new CliError(`ssh-keygen -Y sign failed (exit ${code})${detail ? `: ${detail}` : ''}`));
    });
  });
}
