import { inject, injectable } from '../../core/di.ts';
import type { Principal } from '../../core/auth/principal.ts';
import { Invalid } from '../../core/errors.ts';
import { ManifestReaderToken, ManifestSyncerToken, type ManifestReader, type ManifestSyncer } from '../../core/ports/manifest.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import type {
  ActionContext,
  BuildActionInput,
  BuildActionOutput,
  BuildActions,
  ReleaseActionInput,
  ReleaseActionOutput,
} from '../../core/ports/build-actions.ts';
import { BuildService } from './service.ts';
import { ReleaseService } from './releases.ts';
import { BuildRepository, type BuildRun } from './repository.ts';
import { BuildLogBus, publishRunEnd, runEndKey } from './logs.ts';
import { ACTIVE_STATUSES } from './schemas.ts';

const SHA = /^[0-9a-f]{40}$/;
/**
 * A waiting build step wakes when its run ends (the run's end notice on the log bus, from whichever
 * process ended it); this re-read is only the backstop for a notice lost to a dropped connection
 * (the bus also wakes every waiter when its LISTEN connection comes back).
 */
const WAIT_BACKSTOP_MS = 15_000;

/** The principal an action acts as: the step's job, recorded as creator of what it makes. */
const jobPrincipal = (ctx: ActionContext): Principal => ({
  kind: 'job',
  id: ctx.jobId,
  email: null,
  isAdmin: false,
  scope: { type: 'project', id: ctx.projectId },
  roleCap: null,
  expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
  permissions: null,
});

/** The build and release actions of pipelines and workflows, on the same rules as the API. */
@injectable()
export class BuildActionService implements BuildActions {
  constructor(
    @inject(BuildService) private readonly builds: BuildService,
    @inject(ReleaseService) private readonly releases: ReleaseService,
    @inject(BuildRepository) private readonly repository: BuildRepository,
    @inject(BuildLogBus) private readonly bus: BuildLogBus,
    @inject(ManifestReaderToken) private readonly manifests: ManifestReader,
    @inject(ManifestSyncerToken) private readonly syncer: ManifestSyncer,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  async build(ctx: ActionContext, input: BuildActionInput): Promise<BuildActionOutput> {
    const principal = jobPrincipal(ctx);
    const ref = input.ref ?? (await this.projects.byId(ctx.projectId))?.branch ?? 'main';
    const manifest = (SHA.test(ref) ? await this.manifests.atSha(ctx.projectId, ref) : null) ?? (await this.syncer.syncAt(ctx.projectId, ref, principal));
    const sha = manifest.git_sha!;
    ctx.log(`build of ${ref} (${sha}), manifest ${manifest.manifest_hash}`);
    const view = await this.builds.create(
      ctx.projectId,
      {
        git_sha: sha,
        manifest_hash: manifest.manifest_hash,
        services: input.services,
        inputs: ctx.pipelineRunId ? { pipeline_run_id: ctx.pipelineRunId, step_name: ctx.stepName } : {},
        registry: null,
        cache: {},
        force_rebuild: input.forceRebuild,
      },
      principal,
    );
    ctx.log(`build ${view.id}, run ${view.latest_run!.id}: follow with svc build logs ${view.id} -f`);
    const run = await this.ended(view.latest_run!.id, ctx.signal);
    const artifacts = run.status === 'completed' ? await this.repository.artifacts(view.id) : [];
    return {
      build_id: view.id,
      run_id: run.id,
      status: run.status as BuildActionOutput['status'],
      git_sha: sha,
      manifest_hash: manifest.manifest_hash,
      image_digests: Object.fromEntries(artifacts.map((a) => [a.service_name, a.digest])),
      reused: run.reused_from !== null,
      error_class: run.error_class,
      error_message: run.error_message,
    };
  }

  async release(ctx: ActionContext, input: ReleaseActionInput): Promise<ReleaseActionOutput> {
    const buildId = input.buildId ?? (await this.buildOfRun(ctx));
    const release = await this.releases.create(
      ctx.projectId,
      { build_id: buildId, ...(input.tag ? { tag: input.tag } : {}), ...(input.version ? { version: input.version } : {}) },
      jobPrincipal(ctx),
    );
    ctx.log(`release ${release.tag} (${release.id}) of build ${buildId}${release.created ? '' : ': released before with the same commit and images, kept'}`);
    return { release_id: release.id, tag: release.tag, build_id: buildId, git_sha: release.git_sha, image_digests: release.image_digests };
  }

  /** The build an earlier step of the same pipeline run made (its latest), for a release without build_id. */
  private async buildOfRun(ctx: ActionContext): Promise<string> {
    if (!ctx.pipelineRunId) throw new Invalid('release needs with.build_id outside a pipeline run');
    const spec = await this.repository.specOfPipelineRun(ctx.projectId, ctx.pipelineRunId);
    if (!spec)
      throw new Invalid(`release: no build step of pipeline run ${ctx.pipelineRunId} made a build; add a build step it depends on, or give with.build_id`);
    return spec.id;
  }

  /** Waits until the run ended: woken by its end notice (not by every log line), with a slow re-read as backstop. */
  private async ended(runId: string, signal: AbortSignal): Promise<BuildRun> {
    let wake = () => undefined as void;
    // Listening before each read: an end between the read and the wait still wakes it.
    const stop = this.bus.subscribe(runEndKey(runId), () => wake());
    try {
      for (;;) {
        const woken = new Promise<void>((resolve) => (wake = resolve));
        const run = (await this.repository.run(runId))!;
        if (!ACTIVE_STATUSES.includes(run.status)) return run;
        if (signal.aborted) {
          await this.repository.end(runId, { status: 'cancelled', error_message: 'the step that started it was stopped' });
          publishRunEnd(this.bus, runId);
          throw signal.reason;
        }
        const timer = setTimeout(() => wake(), WAIT_BACKSTOP_MS);
        const onAbort = () => wake();
        signal.addEventListener('abort', onAbort, { once: true });
        await woken;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      }
    } finally {
      stop();
    }
  }
}
