/**
 * Small web images for the deployer tests, made from busybox with `docker import` (nothing pulled):
 * /www/index.html holds `page` (none when null, so a health check asking for it fails), and `cmd`,
 * when given, is the image's command.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DOCKER_CLI } from './images.ts';

/** Imports `ref` and returns its image id (`sha256:…`). */
export function webImage(ref: string, page: string | null, cmd: string[] | null = null): string {
  const root = mkdtempSync(path.join(tmpdir(), 'svc-envs-rootfs-'));
  try {
    mkdirSync(path.join(root, 'bin'));
    copyFileSync('/bin/busybox', path.join(root, 'bin/busybox'));
    symlinkSync('busybox', path.join(root, 'bin/sh'));
    mkdirSync(path.join(root, 'www'));
    if (page !== null) writeFileSync(path.join(root, 'www/index.html'), page);
    const changes = ['--change', 'ENV PATH=/bin', ...(cmd ? ['--change', `CMD ${JSON.stringify(cmd)}`] : [])];
    execFileSync('sh', ['-c', 'dir="$1"; shift; tar -C "$dir" -c . | "$@"', 'sh', root, DOCKER_CLI, 'import', ...changes, '-', ref], { stdio: 'ignore' });
    return execFileSync(DOCKER_CLI, ['image', 'inspect', '--format', '{{.Id}}', ref], { encoding: 'utf8' }).trim();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
