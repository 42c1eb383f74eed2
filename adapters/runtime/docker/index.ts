/**
 * Runtime port on a Docker engine (Engine API through dockerode): one container per attempt, the
 * workspace bind-mounted at its own absolute path and used as the working directory, spec.env as
 * the container's environment, spec.user (else the server's own user), CPU and memory limits from
 * the resource class.
 * Output is attached before the start and streamed line by line; the container is removed in every
 * path before `exited` resolves. Images are never pulled. See docs/runtime-docker.md.
 */
import path from 'node:path';
import type { Readable } from 'node:stream';
import Docker from 'dockerode';
import Joi from 'joi';
import type { Logger } from 'pino';
import type { ProcessSpec, RunningProcess, Runtime } from '../../../core/ports/runtime.ts';
import { defineAdapter } from '../../../core/sdk.ts';
import { writeFiles } from '../files.ts';
import { DockerProcess } from '../../docker/container.ts';
import { engineAddress, engineMessage, statusOf, type EngineAddress } from '../../docker/engine.ts';
import { DEFAULT_RESOURCE_CLASSES, hostLimits, resourceClassSchema, type ResourceClass } from './limits.ts';

export type Options = {
  socket_path: string | null;
  host: string | null;
  image: string;
  resource_classes: Record<string, ResourceClass>;
  default_resource_class: string;
  network: string | null;
  extra_binds: string[];
  kill_grace_ms: number;
  init: boolean;
  ping_timeout_ms: number;
};

const optionsSchema = Joi.object({
  socket_path: Joi.string()
    .pattern(/^\//, 'an absolute path')
    .allow(null)
    .default(null)
    .description('Unix socket of the Docker engine; default: `host`, else DOCKER_HOST, else /var/run/docker.sock'),
  host: Joi.string()
    .pattern(/^(unix|tcp|http|https):\/\/./, 'a DOCKER_HOST address (unix://, tcp://, http://, https://)')
    .allow(null)
    .default(null)
    .when('socket_path', { is: Joi.string(), then: Joi.valid(null).messages({ 'any.only': '"host" cannot be set together with "socket_path"' }) })
    .description('The engine as a DOCKER_HOST address; TLS client certificates only through the DOCKER_HOST/DOCKER_CERT_PATH environment'),
  image: Joi.string().min(1).required().description('Image every attempt runs in (never pulled: build it with adapters/runtime/docker/image/build.sh)'),
  resource_classes: Joi.object()
    .pattern(Joi.string().min(1), resourceClassSchema)
    .default({})
    .description('Resource class (hints.resource_class) → {cpus, memory, pids}; merged over the defaults job.c1 (1 CPU, 2g) and job.c2 (2 CPUs, 4g)'),
  default_resource_class: Joi.string().min(1).default('job.c1').description('Class of jobs that name none'),
  network: Joi.string().min(1).allow(null).default(null).description("Network mode (bridge, host, none, or a network's name); null: the engine's default"),
  extra_binds: Joi.array()
    .items(Joi.string().pattern(/^\/[^:]*:\/[^:]*(:(ro|rw))?$/, '/host/path:/container/path[:ro|rw]'))
    .default([])
    .description('More bind mounts, in Docker Binds syntax'),
  kill_grace_ms: Joi.number().integer().min(0).default(5000).description('After SIGTERM to the container, wait this long before SIGKILL'),
  init: Joi.boolean().default(true).description("Run the engine's init (tini) as PID 1: signals reach the process, orphans are reaped"),
  ping_timeout_ms: Joi.number().integer().min(100).default(5000).description('How long the engine has to answer the ping at boot'),
});

const IMAGE_HELP = 'images are never pulled: build it with adapters/runtime/docker/image/build.sh (see docs/runtime-docker.md)';

export class DockerRuntime implements Runtime {
  readonly name = 'docker';
  /** Commands (a harness's CLI) are the image's: the worker does not look for them on this machine. */
  readonly commandsIn: string;
  private readonly classes: Record<string, ResourceClass>;
  private warnedOwner = false;

  constructor(
    readonly docker: Docker,
    readonly address: EngineAddress,
    private readonly options: Options,
    private readonly logger: Logger,
  ) {
    this.commandsIn = `the image ${options.image}`;
    this.classes = { ...DEFAULT_RESOURCE_CLASSES, ...options.resource_classes };
    if (!this.classes[options.default_resource_class]) {
      throw new Error(
        `adapters.runtime.options.default_resource_class: '${options.default_resource_class}' is not a resource class (${Object.keys(this.classes).join(', ')})`,
      );
    }
  }

  /** Fails unless the engine answers and has the image. */
  async check(): Promise<void> {
    const ms = this.options.ping_timeout_ms;
    try {
      // dockerode's ping takes an abortSignal; its type definitions do not say so.
      const ping = this.docker.ping.bind(this.docker) as unknown as (opts: { abortSignal: AbortSignal }) => Promise<unknown>;
      await ping({ abortSignal: AbortSignal.timeout(ms) });
    } catch (err) {
      const reason = (err as Error).name === 'AbortError' || (err as Error).name === 'TimeoutError' ? `no answer in ${ms} ms` : engineMessage(err);
      throw new Error(`runtime docker: no Docker engine answers at ${this.address.text} (${reason})`);
    }
    await this.requireImage();
  }

  private async requireImage(): Promise<void> {
    try {
      await this.docker.getImage(this.options.image).inspect();
    } catch (err) {
      if (statusOf(err) === 404) throw new Error(`runtime docker: image '${this.options.image}' is not on the engine at ${this.address.text}; ${IMAGE_HELP}`);
      throw new Error(`runtime docker: inspecting image '${this.options.image}' at ${this.address.text} failed: ${engineMessage(err)}`);
    }
  }

  private resourceClass(name: string | undefined): ResourceClass {
    const chosen = name ?? this.options.default_resource_class;
    const rc = this.classes[chosen];
    if (!rc)
      throw new Error(
        `runtime docker: unknown resource class '${chosen}' (known: ${Object.keys(this.classes).join(', ')}; add it to adapters.runtime.options.resource_classes)`,
      );
    return rc;
  }

  /**
   * The container's user: spec.user, else the server's own (worker.run_as_uid null). The worker has
   * handed the workspace to spec.user when the server is root; a server that is not root could not,
   * so the container user writes the workspace only as far as its permissions allow.
   */
  private containerUser(spec: ProcessSpec): string | undefined {
    const uid = process.getuid?.();
    if (!spec.user) return uid === undefined ? undefined : `${uid}:${process.getgid!()}`;
    if (uid !== undefined && uid !== 0 && uid !== spec.user.uid && !this.warnedOwner) {
      this.warnedOwner = true;
      this.logger.warn(
        { serverUid: uid, user: spec.user },
        "runtime docker: the server is not root, so workspaces stay its own; the container user writes them only as far as their permissions allow (worker.run_as_uid null runs containers as the server's user)",
      );
    }
    return `${spec.user.uid}:${spec.user.gid}`;
  }

  /** spec.files belong to spec.user when the server is root (the rest of the workspace was handed over already), else to the server. */
  private filesOwner(spec: ProcessSpec): { uid: number; gid: number } | null {
    return spec.user && process.getuid?.() === 0 ? spec.user : null;
  }

  async start(spec: ProcessSpec): Promise<RunningProcess> {
    const limits = hostLimits(this.resourceClass(spec.resourceClass));
    const cwd = path.resolve(spec.cwd);
    const user = this.containerUser(spec);
    if (spec.files) await writeFiles(cwd, spec.files, this.filesOwner(spec));
    let container: Docker.Container | null = null;
    try {
      await this.requireImage();
      container = await this.docker.createContainer({
        Image: this.options.image,
        Cmd: [spec.command, ...spec.args],
        Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
        WorkingDir: cwd,
        ...(user ? { User: user } : {}),
        Tty: false,
        OpenStdin: false,
        AttachStdin: false,
        AttachStdout: true,
        AttachStderr: true,
        Labels: {
          'svc.runtime': 'docker',
          'svc.workspace': cwd,
          ...(spec.env.SVC_JOB_ID ? { 'svc.job_id': spec.env.SVC_JOB_ID } : {}),
          ...(spec.env.SVC_ATTEMPT_ID ? { 'svc.attempt_id': spec.env.SVC_ATTEMPT_ID } : {}),
        },
        HostConfig: {
          // A mount, not a Binds string: a workspace path may contain ':'.
          Mounts: [{ Type: 'bind', Source: cwd, Target: cwd, ReadOnly: false }],
          Binds: this.options.extra_binds,
          ...(this.options.network ? { NetworkMode: this.options.network } : {}),
          ...limits,
          Init: this.options.init,
          AutoRemove: false,
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
        },
      });
      // Attached before the start, so not a byte of output is missed.
      const stream = (await container.attach({ stream: true, stdout: true, stderr: true })) as unknown as Readable;
      try {
        await container.start();
      } catch (err) {
        stream.destroy();
        throw err;
      }
      return new DockerProcess({ container, stream, graceMs: this.options.kill_grace_ms, timeoutMs: spec.timeoutMs, logger: this.logger });
    } catch (err) {
      if (container) await container.remove({ force: true, v: true }).catch(() => undefined);
      if ((err as Error).message?.startsWith('runtime docker:')) throw err;
      throw new Error(`runtime docker: ${engineMessage(err)}`);
    }
  }
}

export default defineAdapter<Runtime, Options>({
  kind: 'runtime',
  name: 'docker',
  options: optionsSchema,
  create: async (options, deps) => {
    const address = engineAddress(options.socket_path, options.host);
    const runtime = new DockerRuntime(new Docker(address.options), address, options, deps.logger);
    await runtime.check();
    return runtime;
  },
});
