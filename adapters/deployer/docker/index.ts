/**
 * Deployer on a Docker engine (Engine API through dockerode): each service of a release runs as a
 * container from its image by digest, with the manifest's command, environment, ports and health
 * check, labelled with the environment. A redeploy swaps each service's container by its strategy
 * (deploy-strategy.ts): start-first starts the new one beside the old one; replace (a published
 * host port, host networking) stops the old one first. The old ones are removed only once every new
 * one is healthy; a release that does not come up is removed again, with its containers' exit codes
 * and last output in the error, and the old containers serve (started again where they were
 * stopped). Images are never pulled.
 */
import type { Readable } from 'node:stream';
import Docker from 'dockerode';
import Joi from 'joi';
import type { Logger } from 'pino';
import type {
  Deployer,
  DeployOptions,
  DeployOutcome,
  DeployStrategy,
  DeployTarget,
  OneOffExit,
  OneOffRun,
  ReleaseRef,
  ServiceHealth,
} from '../../../core/ports/environments.ts';
import { DeployFailed, releaseImages } from '../../../core/ports/environments.ts';
import { defineAdapter } from '../../../core/sdk.ts';
import { engineAddress, engineMessage, statusOf } from '../../docker/engine.ts';
import { containerSpec, imageCandidates, LABEL, oneOffSpec, SERVICE_RESTART_POLICY } from './spec.ts';
import { describeStrategy, strategyFor } from './strategy.ts';
import { describeFailure, type FailedContainer } from '../../docker/container-output.ts';
import { DockerProcess } from '../../docker/container.ts';

export type Options = {
  socket_path: string | null;
  host: string | null;
  network: string | null;
  health_timeout_ms: number;
  stop_timeout_seconds: number;
};

const optionsSchema = Joi.object({
  socket_path: Joi.string()
    .pattern(/^\//, 'an absolute path')
    .allow(null)
    .default(null)
    .description('Unix socket of the engine; default: host, else DOCKER_HOST, else /var/run/docker.sock'),
  host: Joi.string().allow(null).default(null).description('The engine as a DOCKER_HOST address'),
  network: Joi.string()
    .min(1)
    .allow(null)
    .default(null)
    .description("Network mode of the services' containers (bridge, host, none, or a network's name); null: the engine's default"),
  health_timeout_ms: Joi.number().integer().min(100).default(120_000).description('How long a new container has to become healthy'),
  stop_timeout_seconds: Joi.number().integer().min(0).default(10).description('SIGTERM grace before SIGKILL when containers stop'),
});

type Info = Docker.ContainerInfo;
const POLL_MS = 250;
/** A container without a health check counts as healthy once it has stayed up this long: one that exits at once fails the deploy. */
const UP_WITHOUT_CHECK_MS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A container's health in the environment's terms: healthy, starting (null: not decided yet), or degraded with why. */
function healthOf(state: Docker.ContainerInspectInfo['State']): { health: ServiceHealth['health'] | null; detail: string } {
  if (state.Restarting) return { health: 'degraded', detail: `restarting after it exited with code ${state.ExitCode}` };
  if (!state.Running) {
    if (state.Status !== 'exited') return { health: 'degraded', detail: `not running (${state.Status})` };
    return { health: 'degraded', detail: `exited with code ${state.ExitCode}${state.OOMKilled ? ' (out of memory)' : ''}` };
  }
  const h = state.Health?.Status;
  if (!h || h === 'none') return { health: 'healthy', detail: 'running (no health check)' };
  if (h === 'healthy') return { health: 'healthy', detail: 'health check passing' };
  if (h === 'starting') return { health: null, detail: 'health check starting' };
  const last = state.Health?.Log?.at(-1);
  return { health: 'degraded', detail: `health check failing${last ? `: ${last.Output.trim().slice(0, 200)}` : ''}` };
}

const containerName = (info: Info) => info.Names[0]?.replace(/^\//, '') ?? info.Id.slice(0, 12);

export class DockerDeployer implements Deployer {
  readonly name = 'docker';

  constructor(
    readonly docker: Docker,
    private readonly options: Options,
    private readonly logger: Logger,
  ) {}

  private async containers(target: DeployTarget): Promise<Info[]> {
    return this.docker.listContainers({ all: true, filters: { label: [`${LABEL.env}=${target.environment.id}`] } });
  }

  /** The image to run: `image@digest` when the engine has it, else the digest as an image id, else the reference as given. */
  private async image(service: string, image: string | null, digest: string, pushed: string | null): Promise<string> {
    for (const ref of imageCandidates(image, digest, pushed)) {
      try {
        await this.docker.getImage(ref).inspect();
        return ref;
      } catch (err) {
        if (statusOf(err) !== 404) throw new DeployFailed(`service ${service}: inspecting image ${ref} failed: ${engineMessage(err)}`);
      }
    }
    throw new DeployFailed(`service ${service}: image ${digest} is not on the engine (images are never pulled: build or load it first)`, [
      { service, health: 'degraded', detail: 'image missing' },
    ]);
  }

  /**
   * Reports each step to `options.progress`: per service the image, its deploy strategy and why,
   * the previous container stopped (replace), the container created and started, the wait for
   * health and its end; what it removes. A failed container's exit code and last output lines go to
   * the log and the error; the new containers are removed and stopped previous ones started again.
   */
  async deploy(target: DeployTarget, release: ReleaseRef, options: DeployOptions = {}): Promise<DeployOutcome> {
    const say = (line: string) => options.progress?.(line);
    const names = Object.keys(releaseImages(release)).sort();
    const unknown = names.filter((n) => !target.services[n]);
    if (unknown.length > 0) throw new DeployFailed(`the release names services the manifest does not define: ${unknown.join(', ')}`);
    const old = await this.containers(target);
    const running = old.filter((c) => c.State === 'running');
    say(old.length ? `${old.length} container(s) of the environment exist now, ${running.length} running` : 'no container of the environment runs yet');
    const generation = `${Date.now().toString(36)}`;
    const started: { name: string; container: Docker.Container }[] = [];
    const stopped: Info[] = [];
    try {
      // Every image is found before anything stops.
      const plans: { name: string; image: string; strategy: DeployStrategy }[] = [];
      for (const name of names) {
        const image = await this.image(name, target.services[name].image, releaseImages(release)[name], release.images?.[name] ?? null);
        const choice = strategyFor(name, target.services[name], this.options.network);
        say(`${name}: image ${image}`);
        say(describeStrategy(name, choice));
        plans.push({ name, image, strategy: choice.strategy });
      }
      for (const { name, image, strategy } of plans) {
        if (strategy === 'replace') stopped.push(...(await this.stopPrevious(name, running, say)));
        const spec = containerSpec(target, name, image, generation, this.options.network);
        const container = await this.docker.createContainer(spec).catch((err) => {
          throw new DeployFailed(`service ${name}: the engine refused its container: ${engineMessage(err)}`);
        });
        started.push({ name, container });
        say(`${name}: container ${spec.name} (${container.id.slice(0, 12)}) created`);
        await container.start().catch((err) => {
          throw new DeployFailed(`service ${name}: the engine could not start its container: ${engineMessage(err)}`);
        });
        say(`${name}: container started`);
      }
      const services = await Promise.all(
        started.map(({ name, container }) => this.waitHealthy(name, container, target.services[name].healthcheck !== null, say)),
      );
      const failed = started.map((s, i) => ({ ...s, ...services[i] })).filter((s) => s.health !== 'healthy');
      if (failed.length > 0) throw await this.notHealthy(failed, services, say);
      for (const { container } of started) await container.update({ RestartPolicy: SERVICE_RESTART_POLICY });
      for (const info of old) {
        await this.docker.getContainer(info.Id).remove({ force: true });
        say(`${info.Labels[LABEL.service] ?? '?'}: previous container ${containerName(info)} removed`);
      }
      return { health: 'healthy', services };
    } catch (err) {
      const failure = err instanceof DeployFailed ? err : new DeployFailed(`the engine refused the deploy: ${engineMessage(err)}`);
      say(`failed: ${failure.message}`);
      for (const { container } of started) await container.remove({ force: true }).catch(() => undefined);
      const after = stopped.length ? '; the previous ones it stopped start again' : old.length ? '; the previous ones keep serving' : '';
      if (started.length) say(`the new containers were removed${after}`);
      throw stopped.length ? await this.restartPrevious(stopped, failure, say) : failure;
    }
  }

  /** Replace: stops the service's running previous containers (kept, to start again should the new one fail); the ones it stopped. */
  private async stopPrevious(service: string, running: Info[], say: (line: string) => void): Promise<Info[]> {
    const previous = running.filter((c) => c.Labels[LABEL.service] === service);
    for (const info of previous) {
      await this.docker
        .getContainer(info.Id)
        .stop({ t: this.options.stop_timeout_seconds })
        .catch((err) => {
          if (statusOf(err) !== 304)
            throw new DeployFailed(`service ${service}: stopping previous container ${containerName(info)} failed: ${engineMessage(err)}`);
        });
      say(`${service}: previous container ${containerName(info)} stopped (kept until the new one is healthy)`);
    }
    return previous;
  }

  /** The deploy's failure for containers that did not become healthy: each one's reason, exit code and last output lines, also in the log. */
  private async notHealthy(failed: FailedContainer[], services: ServiceHealth[], say: (line: string) => void): Promise<DeployFailed> {
    return new DeployFailed(`not healthy: ${(await this.describeAll(failed, say)).join('; ')}`, services);
  }

  /** Says what each failed container said before it failed; one phrase each for an error message. */
  private async describeAll(failed: FailedContainer[], say: (line: string) => void): Promise<string[]> {
    const phrases: string[] = [];
    for (const container of failed) {
      const { lines, phrase } = await describeFailure(container);
      lines.forEach(say);
      phrases.push(phrase);
    }
    return phrases;
  }

  /** After a failed replace: starts the previous containers it stopped and waits for their health; the failure, saying whether they serve again. */
  private async restartPrevious(stopped: Info[], failure: DeployFailed, say: (line: string) => void): Promise<DeployFailed> {
    const back = await Promise.all(
      stopped.map(async (info) => {
        const service = info.Labels[LABEL.service] ?? '?';
        const container = this.docker.getContainer(info.Id);
        try {
          await container.start().catch((err) => {
            if (statusOf(err) !== 304) throw err; // 304: already running
          });
          say(`${service}: previous container ${containerName(info)} started again`);
          const checked = (await container.inspect()).Config.Healthcheck !== undefined;
          return { ...(await this.waitHealthy(service, container, checked, say)), container };
        } catch (err) {
          return { service, health: 'degraded' as const, detail: `could not be started again: ${engineMessage(err)}`, container };
        }
      }),
    );
    const down = back.filter((b) => b.health !== 'healthy');
    if (down.length === 0) {
      say('the previous containers serve again');
      return failure;
    }
    const phrases = await this.describeAll(down, say);
    say(`the previous containers did not all come back: ${phrases.join('; ')}`);
    return new DeployFailed(`${failure.message}; the previous container(s) did not come back healthy: ${phrases.join('; ')}`, failure.services, false);
  }

  /** Waits for the container's health (with `say`, a deploy's progress: the wait and how it ended). */
  private async waitHealthy(service: string, container: Docker.Container, checked = true, say?: (line: string) => void): Promise<ServiceHealth> {
    if (checked) say?.(`${service}: waiting for its health check (at most ${this.options.health_timeout_ms} ms)`);
    const began = Date.now();
    const deadline = began + this.options.health_timeout_ms;
    for (;;) {
      const { health, detail } = healthOf((await container.inspect()).State);
      const settled = health !== 'healthy' || checked || Date.now() - began >= UP_WITHOUT_CHECK_MS;
      const ended =
        health && settled
          ? { service, health, detail }
          : Date.now() > deadline
            ? { service, health: 'degraded' as const, detail: `not healthy after ${this.options.health_timeout_ms} ms (${detail})` }
            : null;
      if (ended) {
        say?.(`${service}: ${ended.health === 'healthy' ? `healthy (${ended.detail})` : `not healthy: ${ended.detail}`}`);
        return ended;
      }
      await sleep(POLL_MS);
    }
  }

  async health(target: DeployTarget): Promise<DeployOutcome> {
    const infos = await this.containers(target);
    const services: ServiceHealth[] = [];
    for (const info of infos) {
      const { health, detail } = healthOf((await this.docker.getContainer(info.Id).inspect()).State);
      services.push({ service: info.Labels[LABEL.service], health: health ?? 'degraded', detail });
    }
    services.sort((a, b) => a.service.localeCompare(b.service));
    if (services.length === 0) return { health: 'degraded', services: [{ service: '*', health: 'degraded', detail: 'no containers run for the environment' }] };
    return { health: services.every((s) => s.health === 'healthy') ? 'healthy' : 'degraded', services };
  }

  async suspend(target: DeployTarget): Promise<void> {
    for (const info of await this.containers(target)) {
      if (info.State !== 'running') continue;
      await this.docker
        .getContainer(info.Id)
        .stop({ t: this.options.stop_timeout_seconds })
        .catch((err) => {
          if (statusOf(err) !== 304) throw err; // 304: already stopped
        });
    }
  }

  async resume(target: DeployTarget): Promise<DeployOutcome> {
    const infos = await this.containers(target);
    for (const info of infos) if (info.State !== 'running') await this.docker.getContainer(info.Id).start();
    const services = await Promise.all(infos.map((i) => this.waitHealthy(i.Labels[LABEL.service], this.docker.getContainer(i.Id))));
    return { health: services.length > 0 && services.every((s) => s.health === 'healthy') ? 'healthy' : 'degraded', services };
  }

  /** The environment's containers, and any one-off job container a stopped process left behind. */
  async remove(target: DeployTarget): Promise<void> {
    const leftOver = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL.oneOff}=${target.environment.id}`] } });
    for (const info of [...(await this.containers(target)), ...leftOver]) {
      await this.docker
        .getContainer(info.Id)
        .remove({ force: true })
        .catch((err) => {
          if (statusOf(err) !== 404) throw err;
        });
    }
  }

  /** The service's image run once with its command and environment, output line by line to `run.log`; the container is removed after. */
  async runOnce(target: DeployTarget, release: ReleaseRef, run: OneOffRun): Promise<OneOffExit> {
    const digest = releaseImages(release)[run.service];
    if (!target.services[run.service] || !digest) throw new DeployFailed(`the release has no image of service ${run.service}`);
    const image = await this.image(run.service, target.services[run.service].image, digest, release.images?.[run.service] ?? null);
    let container: Docker.Container | null = null;
    let proc: DockerProcess;
    try {
      container = await this.docker.createContainer(oneOffSpec(target, run.service, image, run.command, this.options.network));
      const stream = (await container.attach({ stream: true, stdout: true, stderr: true })) as unknown as Readable;
      await container.start();
      proc = new DockerProcess({ container, stream, graceMs: this.options.stop_timeout_seconds * 1000, timeoutMs: run.timeoutMs, logger: this.logger });
    } catch (err) {
      await container?.remove({ force: true }).catch(() => undefined);
      throw new DeployFailed(`the engine refused the job of ${run.service}: ${engineMessage(err)}`);
    }
    const onAbort = () => void proc.kill();
    run.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const { line } of proc.lines()) await run.log(line);
      const exit = await proc.exited;
      return { exit_code: exit.exitCode, timed_out: exit.timedOut };
    } finally {
      run.signal?.removeEventListener('abort', onAbort);
    }
  }
}

export default defineAdapter<Deployer, Options>({
  kind: 'deployer',
  name: 'docker',
  options: optionsSchema,
  create: (options, deps) => new DockerDeployer(new Docker(engineAddress(options.socket_path, options.host).options), options, deps.logger),
});
