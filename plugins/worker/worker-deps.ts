/** What running an attempt needs (attempt-run.ts): the worker's settings and the ports it uses. */
import type { AddressGuard } from '../../core/http/address-guard.ts';
import type { Logger } from 'pino';
import type { MachineTokens } from '../../core/auth/machine-tokens.ts';
import type { Runtime } from '../../core/ports/runtime.ts';
import type { HarnessRegistry } from '../../core/ports/harness.ts';
import type { ManagedModels } from '../../core/ports/inference.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import type { CoordinationThreads } from '../../core/ports/threads.ts';
import type { ResourceStore } from '../../core/ports/resources.ts';
import type { SecretResolver } from '../../core/ports/secrets.ts';
import type { AttemptControl } from '../../core/ports/attempts.ts';
import type { GitSetup } from './git.ts';
import type { DiffLimits } from './diff.ts';
import type { RepoUrlPolicy } from '../../core/git-access.ts';
import type { RunAs } from './run-as.ts';
import type { AttemptSandbox } from './sandbox-policy.ts';
import type { BuildActions } from '../../core/ports/build-actions.ts';
import type { EnvironmentActions } from '../../core/ports/environments.ts';
import type { VcsHost } from '../../core/ports/vcshost.ts';
import type { ChatApp } from '../../core/ports/chatapp.ts';

export interface WorkerSettings {
  workspaceRoot: string;
  keepWorkspaces: boolean;
  /** Reused workspaces unused this long are removed (sweepWorkspaces). */
  workspaceIdleMs: number;
  repoCache?: GitSetup['cache'];
  /** Isolated attempts' working trees are overlays over the cache's prepared checkouts (decided once at start: overlayUnavailable). */
  copyOnWrite?: boolean;
  heartbeatMs: number;
  leaseSeconds: number;
  logFlushMs: number;
  git: { token_secret: string; ssh_key_secret: string; author_name: string; author_email: string };
  /** worker.run_as_uid: the user attempts run as (the workspace is handed to it); null: see attemptUser. */
  runAs: RunAs | null;
  /** What worker.sandbox came to on this machine. */
  sandbox: AttemptSandbox;
  /** Which file:// repositories may be cloned here (worker.git.allow_file_urls, file_roots). */
  repoUrls: RepoUrlPolicy;
  /** The outbound address policy every clone, fetch and push is checked and pinned by (outbound.*); absent: none. */
  addresses?: AddressGuard;
  /** worker.diff: what is kept of each attempt's diff (docs/diffs.md); absent: the defaults. */
  diff?: DiffLimits;
}

/** What running an attempt needs; optional ports are looked up per attempt (their plugins may load after this one). */
export interface WorkerDeps {
  control: AttemptControl;
  runtime: Runtime;
  tokens: MachineTokens;
  logger: Logger;
  settings: WorkerSettings;
  secrets(): SecretResolver | null;
  harnesses(): HarnessRegistry | null;
  manifests(): ManifestReader | null;
  resources(): ResourceStore | null;
  coordination(): CoordinationThreads | null;
  managedModels(): ManagedModels | null;
  buildActions(): BuildActions | null;
  environments(): EnvironmentActions | null;
  vcshost(): VcsHost | null;
  chatapp(): ChatApp | null;
  apiUrl(): string;
  /** An attempt found its harness missing here: the worker reports what it can run again, now. */
  harnessesChanged?(): void;
}
