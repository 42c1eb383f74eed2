import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Config } from '../../../core/config/schema.ts';
import { trustedGit } from '../../../core/git-run.ts';
import { optionalRepoAccess, projectAccessSecrets, redactUrl, repoUrlPolicy } from '../../../core/git-access.ts';
import { outboundGuard } from '../../../core/http/address-guard.ts';
import { maskSecrets } from '../../../core/secrets/mask.ts';
import type { SecretResolver } from '../../../core/ports/secrets.ts';
import { PullRequestHosts } from '../pull-requests/pull-requests.ts';

const PUSH_TIMEOUT_MS = 120_000;

export interface BranchCleanup {
  branches: string[];
  deleted: boolean;
  error: string | null;
}

/**
 * Deletes the branches a race's losing attempts pushed (docs/worker.md, "Rival attempts"), with the project's
 * repository credentials as the worker pushes with them (worker.git secrets), from an empty bare
 * repository of its own: `git push <repo> --delete <branches>`. A failure is reported, never thrown:
 * the choice stands whatever the code host says.
 */
@injectable()
export class RaceBranches {
  constructor(
    @inject(Tokens.Config) private readonly config: Config,
    @inject(PullRequestHosts) private readonly hosts: { secrets: () => SecretResolver | null },
  ) {}

  async delete(project: { id: string; org_id: string; repo_url: string | null }, branches: string[]): Promise<BranchCleanup> {
    if (branches.length === 0 || !project.repo_url)
      return { branches, deleted: branches.length === 0, error: project.repo_url ? null : 'the project has no repository' };
    const scratch = await mkdtemp(path.join(tmpdir(), 'svc-race-'));
    let masked: string[] = [];
    try {
      const secrets = projectAccessSecrets({
        names: this.config.worker.git,
        resolver: this.hosts.secrets(),
        projectId: project.id,
        orgId: project.org_id,
        credentialsDir: path.join(scratch, 'credentials'),
        repoUrls: repoUrlPolicy(this.config),
        addresses: outboundGuard(this.config),
      });
      const { access } = await optionalRepoAccess(project.repo_url, secrets, 'deleting branches of');
      masked = access.secrets;
      const git = (args: string[]) => trustedGit(args, { cwd: scratch, env: access.env, timeoutMs: PUSH_TIMEOUT_MS });
      await git(['init', '--quiet', '--bare', path.join(scratch, 'repo.git')]);
      await git(['--git-dir', path.join(scratch, 'repo.git'), 'push', '--quiet', project.repo_url, ...branches.map((b) => `:refs/heads/${b}`)]);
      return { branches, deleted: true, error: null };
    } catch (err) {
      const message = maskSecrets(String((err as { stderr?: string }).stderr || (err as Error).message), masked);
      return { branches, deleted: false, error: message.replaceAll(project.repo_url, redactUrl(project.repo_url)).trim() };
    } finally {
      await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
    }
  }
}
