import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Config } from '../../core/config/schema.ts';

export const MANIFEST_PATH = '.svc/manifest.yaml';
const GIT_TIMEOUT_MS = 60_000;
/** Branch, tag or SHA; never an option (no leading '-'), no revision syntax beyond names. */
export const REF_PATTERN = /^(?!-)(?!.*\.\.)(?!.*@\{)[A-Za-z0-9._\/-]{1,200}$/;

export interface GitManifest {
  yaml: string;
  git_sha: string;
  ref: string;
}

class GitError extends Error {
  constructor(readonly stderr: string) {
    super(stderr);
  }
}

function git(args: string[], cwd?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      {
        cwd,
        timeout: GIT_TIMEOUT_MS,
        maxBuffer: 8 * 1024 * 1024,
        env: { GIT_SSH_COMMAND: 'ssh -o BatchMode=yes', ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true' },
      },
      (error, stdout, stderr) => (error ? reject(new GitError(String(stderr).trim() || error.message)) : resolve(String(stdout))),
    );
  });
}

const lastLine = (text: string) => text.split('\n').filter(Boolean).pop() ?? text;

/**
 * Reads `.svc/manifest.yaml` from a project's repository. Each project keeps a bare mirror under
 * `<data_dir>/manifest-mirrors/<project_id>`, refreshed on every read; reads of one project run
 * one after another.
 */
@injectable()
export class GitManifestSource {
  private readonly root: string;
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(@inject(Tokens.Config) config: Config) {
    this.root = path.resolve(config.data_dir, 'manifest-mirrors');
  }

  read(projectId: string, repoUrl: string, ref: string): Promise<GitManifest> {
    const previous = this.queues.get(projectId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.readNow(projectId, repoUrl, ref));
    this.queues.set(projectId, next);
    void next
      .finally(() => {
        if (this.queues.get(projectId) === next) this.queues.delete(projectId);
      })
      .catch(() => undefined);
    return next;
  }

  private async readNow(projectId: string, repoUrl: string, ref: string): Promise<GitManifest> {
    const mirror = path.join(this.root, projectId);
    try {
      if (!existsSync(path.join(mirror, 'HEAD'))) {
        mkdirSync(this.root, { recursive: true });
        await git(['clone', '--quiet', '--mirror', '--', repoUrl, mirror]);
      } else {
        await git(['remote', 'set-url', 'origin', repoUrl], mirror);
        await git(['fetch', '--quiet', '--prune', 'origin'], mirror);
      }
    } catch (e) {
      throw Boom.badData(`could not fetch ${repoUrl}: ${lastLine((e as Error).message)} (check the URL and the server's git credentials)`);
    }
    let sha: string;
    try {
      sha = (await git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], mirror)).trim();
    } catch {
      throw Boom.badData(`ref '${ref}' not found in ${repoUrl}`);
    }
    try {
      const yaml = await git(['show', `${sha}:${MANIFEST_PATH}`], mirror);
      return { yaml, git_sha: sha, ref };
    } catch {
      throw Boom.badData(`${MANIFEST_PATH} not found at ${ref} (${sha}) in ${repoUrl}`);
    }
  }
}
