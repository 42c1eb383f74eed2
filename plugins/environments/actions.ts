import { NotFound, Invalid } from '../../core/errors.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import type { ActionContext, ActionOutputs, EnvironmentActions } from '../../core/ports/environments.ts';
import type { DeployRequest, EnvironmentService } from './service.ts';
import type { DeployService } from './deploy-service.ts';
import type { DeployRow } from './repository.ts';

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

const deployOutputs = (deploy: DeployRow, envName: string): ActionOutputs => ({
  deploy_id: deploy.id,
  env_name: envName,
  status: deploy.status,
  release_id: deploy.release.id,
  release_tag: deploy.release.tag,
  git_sha: deploy.release.git_sha,
  image_digests: deploy.release.image_digests,
});

/** The worker's environment actions and `git.ref_policy` env lookups, on the environment service. */
export function environmentActions(service: EnvironmentService, deploys: DeployService, manifests: ManifestReader): EnvironmentActions {
  return {
    async releaseSha(projectId, envName) {
      const env = await service.get(projectId, envName).catch((err) => {
        if (err instanceof NotFound) return null;
        throw err;
      });
      return env?.current_release?.git_sha ?? null;
    },

    /** A direct deploy of the release the run's inputs name (release_id, release_tag, or git_sha with image_digests), awaited. */
    async deploy(ctx: ActionContext, envName: string) {
      const i = ctx.inputs;
      const digests = i.image_digests && typeof i.image_digests === 'object' ? (i.image_digests as Record<string, string>) : undefined;
      const request: DeployRequest = { direct: true, inputs: { ...(str(i.release_id) ? { release_id: i.release_id } : {}) } };
      if (str(i.release_tag)) request.release_tag = str(i.release_tag);
      if (digests) request.image_digests = digests;
      if (str(i.image_tag)) request.image_tag = str(i.image_tag);
      if (str(i.git_sha)) {
        request.git_sha = str(i.git_sha);
        request.manifest_hash = str(i.manifest_hash) ?? (await manifests.current(ctx.projectId))?.manifest_hash;
      }
      await ctx.log(`deploying to environment ${envName}`);
      const echo = (line: string) => void ctx.log(line);
      const deployId = str(i.deploy_id);
      const opts = { wait: true, echo, ...(deployId && ctx.runId ? { approved: { deployId, runId: ctx.runId } } : {}) };
      const deploy = await deploys.deploy({ id: ctx.createdBy ?? 'system' }, ctx.projectId, envName, request, opts);
      if (deploy.status === 'awaiting_approval' || deploy.status === 'waiting')
        throw new Invalid(
          `environment ${envName} is protected: deploy ${deploy.id} is ${deploy.status} (approve it through the API, or deploy through POST …/environments/${envName}/deploy)`,
        );
      await ctx.log(`deploy ${deploy.id}: ${deploy.status}${deploy.error_message ? `: ${deploy.error_message}` : ''}`);
      if (deploy.status === 'failed') throw new Invalid(`deploy ${deploy.id} to ${envName} failed: ${deploy.error_message}`);
      return deployOutputs(deploy, envName);
    },

    /** The `job` action: the service run once; its exit code is the step's result (non-zero fails it). */
    async job(ctx, { envName, service: name, command }) {
      const i = ctx.inputs;
      const namesRelease = str(i.release_id) || str(i.release_tag);
      const release: DeployRequest | null = namesRelease
        ? { inputs: { ...(str(i.release_id) ? { release_id: i.release_id } : { release_tag: i.release_tag }) } }
        : null;
      await ctx.log(`running ${name} once in environment ${envName}${command ? `: ${command.join(' ')}` : ''}`);
      const { release: ran, exit } = await service.runJob(ctx.projectId, envName, { service: name, command, release, log: ctx.log, signal: ctx.signal });
      await ctx.log(`${name} ended${exit.timed_out ? ' (timed out)' : ''} with exit code ${exit.exit_code ?? 'none (killed)'}`);
      return {
        env_name: envName,
        service: name,
        release_id: ran.id,
        release_tag: ran.tag,
        image_digest: ran.image_digests[name] ?? null,
        exit_code: exit.exit_code,
        timed_out: exit.timed_out,
      };
    },

    async ensure(ctx, envName, kind) {
      const { env, created } = await service.ensure({ id: ctx.createdBy ?? 'system' }, ctx.projectId, envName, { ...(kind ? { kind } : {}) });
      await ctx.log(`environment ${envName} ${created ? 'created' : 'exists'} (${env.type}${env.kind ? `, ${env.kind}` : ''})`);
      return { environment_id: env.id, env_name: env.name, created, type: env.type, kind: env.kind };
    },

    /** Deletes a temporary environment and what runs for it; one that is gone already is no failure. */
    async remove(ctx, envName) {
      try {
        const env = await service.remove(ctx.projectId, envName, false);
        await ctx.log(`environment ${envName} deleted`);
        return { environment_id: env.id, env_name: envName, removed: true };
      } catch (err) {
        if (!(err instanceof NotFound)) throw err;
        await ctx.log(`environment ${envName} does not exist: nothing to delete`);
        return { environment_id: null, env_name: envName, removed: false };
      }
    },
  };
}
