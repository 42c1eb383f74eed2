import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Joi from 'joi';
import { defineAdapter } from '../../../core/sdk.ts';
import { BuildFailure, type Builder, type BuildRequest, type BuiltImage, type PushTarget, type ServiceBuild } from '../../../core/ports/builder.ts';
import { checkout } from '../git-checkout.ts';
import { lastMeaningful, runLines } from '../process.ts';
import { failedStage } from '../failed-stage.ts';
import { containedBuildPaths, type BuildPaths } from '../build-paths.ts';

type Options = {
  docker_bin: string;
  docker_host: string | null;
};

const optionsSchema = Joi.object({
  docker_bin: Joi.string().min(1).default('/usr/bin/docker').description('a Docker CLI that builds with BuildKit without the buildx plugin (Debian 20.10)'),
  docker_host: Joi.string().allow(null).default(null).description('DOCKER_HOST; null: the CLI default (/var/run/docker.sock)'),
});

const DENIED = /unauthorized|authentication required|denied|insufficient_scope|no basic auth credentials/i;

/**
 * BuildKit in the local Docker engine, through the Docker CLI: a clean checkout at the build's
 * SHA, one `docker build` per service with no network (the engine here has no bridge, and builds
 * must not fetch), then `docker push` with a throw-away client config holding the registry
 * credentials. The digest is the pushed manifest's (or the image id when nothing is pushed).
 */
class BuildxBuilder implements Builder {
  readonly name = 'buildx';

  constructor(private readonly options: Options) {}

  async available(): Promise<{ ok: true } | { ok: false; reason: string }> {
    const ran = await runLines(this.options.docker_bin, ['version', '--format', '{{.Server.Version}}'], {
      env: this.env(null),
      signal: AbortSignal.timeout(10_000),
      onLine: () => undefined,
    }).catch((e: Error) => ({ code: -1, lines: [e.message] }));
    return ran.code === 0 ? { ok: true } : { ok: false, reason: `no Docker engine answers ${this.options.docker_bin} (${lastMeaningful(ran.lines)})` };
  }

  async build(request: BuildRequest): Promise<BuiltImage[]> {
    const work = mkdtempSync(path.join(tmpdir(), 'svc-build-'));
    const config = path.join(work, 'docker-config');
    const repo = path.join(work, 'repo');
    try {
      writeClientConfig(config, request.push);
      request.log(`checking out ${request.gitSha}`, 'system');
      await checkout(request.repoUrl, request.access, request.gitSha, repo, request.signal, (l) => request.log(l, 'stderr'), request.repoCache);
      // Every service's paths are resolved through their links and kept inside the checkout before
      // anything is built: Docker follows links in the context folder and the Dockerfile on the host.
      const paths: BuildPaths[] = [];
      for (const service of request.services) paths.push(await containedBuildPaths(repo, service));
      const images: BuiltImage[] = [];
      for (const [i, service] of request.services.entries()) images.push(await this.buildOne(service, paths[i], config, request));
      return images;
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }

  private async buildOne(service: ServiceBuild, { context, dockerfile }: BuildPaths, config: string, request: BuildRequest): Promise<BuiltImage> {
    const platforms = request.platforms.length ? ['--platform', request.platforms.join(',')] : [];
    request.log(`building ${service.service} → ${service.image_ref}`, 'system');
    const built = await this.docker(
      ['build', '--network=none', '--progress=plain', '-f', dockerfile, '-t', service.image_ref, ...platforms, context],
      config,
      request,
    );
    if (built.code !== 0) {
      const stage = failedStage(built.lines);
      throw new BuildFailure('build_error', `${service.service}: ${lastMeaningful(built.lines)}`, stage);
    }
    let digest: string | null = null;
    if (request.push) {
      const pushed = await this.docker(['push', service.image_ref], config, request);
      if (pushed.code !== 0) {
        const why = lastMeaningful(pushed.lines);
        throw new BuildFailure(
          DENIED.test(pushed.lines.join('\n')) ? 'auth_error' : 'registry_error',
          `${service.service}: push to ${request.push.host} failed: ${why}`,
        );
      }
      digest = pushed.lines.map((l) => /digest: (sha256:[0-9a-f]{64})/.exec(l)?.[1]).find(Boolean) ?? null;
      if (!digest) throw new BuildFailure('registry_error', `${service.service}: the registry answered no digest for ${service.image_ref}`);
    }
    const inspected = await this.docker(['image', 'inspect', '--format', '{{json .}}', service.image_ref], config, { ...request, log: () => undefined });
    if (inspected.code !== 0) throw new BuildFailure('build_error', `${service.service}: the image ${service.image_ref} is not in the engine after its build`);
    const info = JSON.parse(inspected.lines.join('')) as { Id: string; Size: number; Os: string; Architecture: string; Variant?: string };
    return {
      service_name: service.service,
      image_ref: service.image_ref,
      digest: digest ?? info.Id,
      platforms: [[info.Os, info.Architecture, info.Variant].filter(Boolean).join('/')],
      size_bytes: info.Size,
    };
  }

  private docker(args: string[], config: string | null, request: Pick<BuildRequest, 'signal' | 'log'>) {
    return runLines(this.options.docker_bin, args, { env: this.env(config), signal: request.signal, onLine: (line, stream) => request.log(line, stream) });
  }

  private env(config: string | null): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_BUILDKIT: '1' };
    if (config) env.DOCKER_CONFIG = config;
    if (this.options.docker_host) env.DOCKER_HOST = this.options.docker_host;
    return env;
  }
}

/** A Docker client config of its own per build: the credentials reach the CLI in a private file, never its arguments. */
function writeClientConfig(dir: string, push: PushTarget | null): void {
  const auths = push ? { [push.host]: { auth: Buffer.from(`${push.username}:${push.password}`).toString('base64') } } : {};
  mkdirSync(dir, { mode: 0o700 });
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ auths }), { mode: 0o600 });
}

export default defineAdapter<Builder, Options>({
  kind: 'builder',
  name: 'buildx',
  options: optionsSchema,
  create: (options) => new BuildxBuilder(options),
});
