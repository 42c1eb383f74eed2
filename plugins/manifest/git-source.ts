import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Config } from '../../core/config/schema.ts';
import { GitAccessError, optionalRepoAccess, projectAccessSecrets, redactUrl, repoUrlPolicy, type RepoAccess } from '../../core/git-access.ts';
import { outboundGuard } from '../../core/http/address-guard.ts';
import { maskSecrets } from '../../core/secrets/mask.ts';
import { trustedGit } from '../../core/git-run.ts';
import type { SecretResolver } from '../../core/ports/secrets.ts';

/** Secrets are looked up lazily: the secrets plugin may load after this one. */
export const ManifestSecrets = Symbol('ManifestSecrets');

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

/** svc's hardened git (core/git-run.ts) with the project's credentials; failures carry git's stderr, secrets masked. */
async function git(args: string[], cwd: string, access: Pick<RepoAccess, 'env' | 'secrets'>, untrimmed = false): Promise<string> {
  try {
    return await trustedGit(args, { cwd, env: { GIT_SSH_COMMAND: 'ssh -o BatchMode=yes', ...access.env }, timeoutMs: GIT_TIMEOUT_MS, untrimmed });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new GitError(maskSecrets(err.stderr?.trim() || err.message, access.secrets));
  }
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

  constructor(
    @inject(Tokens.Config) private readonly config: Config,
    @inject(ManifestSecrets) private readonly secrets: () => SecretResolver | null,
  ) {
    this.root = path.resolve(config.data_dir, 'manifest-mirrors');
  }

  /** With the project's git credentials (worker.git's secrets, as the worker and the builders use them; none for a public repository). */
  read(project: { id: string; org_id: string | null }, repoUrl: string, ref: string): Promise<GitManifest> {
    const projectId = project.id;
    const previous = this.queues.get(projectId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.readWithAccess(project, repoUrl, ref));
    this.queues.set(projectId, next);
    void next
      .finally(() => {
        if (this.queues.get(projectId) === next) this.queues.delete(projectId);
      })
      .catch(() => undefined);
    return next;
  }

  private async readWithAccess(project: { id: string; org_id: string | null }, repoUrl: string, ref: string): Promise<GitManifest> {
    const credentialsDir = mkdtempSync(path.join(tmpdir(), 'svc-manifest-credentials-'));
    try {
      const secrets = projectAccessSecrets({
        names: this.config.worker.git,
        resolver: this.secrets(),
        projectId: project.id,
        orgId: project.org_id,
        credentialsDir,
        repoUrls: repoUrlPolicy(this.config),
        addresses: outboundGuard(this.config),
      });
      let access: Pick<RepoAccess, 'env' | 'secrets'>;
      try {
        access = (await optionalRepoAccess(repoUrl, secrets, 'reading')).access;
      } catch (e) {
        if (e instanceof GitAccessError) throw Boom.badData(`could not fetch ${redactUrl(repoUrl)}: ${e.message}`);
        throw e;
      }
      return await this.readNow(project.id, repoUrl, ref, access);
    } finally {
      rmSync(credentialsDir, { recursive: true, force: true });
    }
  }

  private async readNow(projectId: string, repoUrl: string, ref: string, access: Pick<RepoAccess, 'env' | 'secrets'>): Promise<GitManifest> {
    const mirror = path.join(this.root, projectId);
    try {
      if (!existsSync(path.join(mirror, 'HEAD'))) {
        mkdirSync(this.root, { recursive: true });
        await git(['clone', '--quiet', '--mirror', '--', repoUrl, mirror], this.root, access);
      } else {
        await git(['remote', 'set-url', 'origin', repoUrl], mirror, access);
        await git(['fetch', '--quiet', '--prune', 'origin'], mirror, access);
      }
    } catch (e) {
      throw Boom.badData(`could not fetch ${redactUrl(repoUrl)}: ${lastLine((e as Error).message)} (check the URL and the server's git credentials)`);
    }
    let sha: string;
    try {
      sha = (await git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], mirror, access)).trim();
    } catch {
      throw Boom.badData(`ref '${ref}' not found in ${repoUrl}`);
    }
    try {
      const yaml = await git(['show', `${sha}:${MANIFEST_PATH}`], mirror, access, true);
      return { yaml, git_sha: sha, ref };
    } catch {
      throw Boom.badData(`${MANIFEST_PATH} not found at ${ref} (${sha}) in ${repoUrl}`);
    }
  }
}
