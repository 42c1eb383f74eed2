/**
 * A builder for svc, added through config alone (see README.md): each service's image is built by
 * a command the operator names (a build farm's client, a script around podman or nixpacks), given
 * the service as JSON on its standard input and the project's git credentials and the push
 * target in its environment. The command prints its progress, one line at a time, and ends with a
 * line `{"digest": "sha256:…", "size_bytes": N}` (size optional). A non-zero exit fails the build
 * (`build_error`, its last line as the reason).
 * Only types come from svc (a peer dependency); a failure is an Error named 'BuildFailure' with an
 * errorClass, which svc recognises without sharing its class.
 */
import { spawn } from 'node:child_process';
import Joi from 'joi';
import type { Builder, BuildErrorClass, BuildRequest, BuiltImage, ServiceBuild } from 'svc';

interface Options {
  command: string;
  args: string[];
  env: Record<string, string>;
}

const failure = (errorClass: BuildErrorClass, message: string) => Object.assign(new Error(message), { name: 'BuildFailure', errorClass, stage: null });

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** The command's last line, read as its answer. */
function answerOf(line: string | undefined): { digest: string; size_bytes: number | null } | null {
  try {
    const answer = JSON.parse(line ?? '') as { digest?: unknown; size_bytes?: unknown };
    if (typeof answer.digest !== 'string' || !DIGEST.test(answer.digest)) return null;
    const size = answer.size_bytes;
    return { digest: answer.digest, size_bytes: Number.isInteger(size) && (size as number) >= 0 ? (size as number) : null };
  } catch {
    return null;
  }
}

class CommandBuilder implements Builder {
  readonly name: string;

  constructor(
    name: string,
    private readonly options: Options,
  ) {
    this.name = name;
  }

  async available(): Promise<{ ok: true } | { ok: false; reason: string }> {
    return new Promise((resolve) => {
      const probe = spawn(this.options.command, [...this.options.args, '--version'], {
        stdio: 'ignore',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...this.options.env },
      });
      probe.once('error', (err) => resolve({ ok: false, reason: `${this.options.command}: ${err.message}` }));
      probe.once('close', (code) => resolve(code === 0 ? { ok: true } : { ok: false, reason: `${this.options.command} --version exited ${code}` }));
    });
  }

  async build(request: BuildRequest): Promise<BuiltImage[]> {
    const images: BuiltImage[] = [];
    for (const service of request.services) images.push(await this.buildOne(request, service));
    return images;
  }

  private buildOne(request: BuildRequest, service: ServiceBuild): Promise<BuiltImage> {
    if (request.signal.aborted) return Promise.reject(failure('timeout_error', 'the build was stopped before it started'));
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      ...this.options.env,
      ...request.access.env,
      ...(request.push ? { PUSH_HOST: request.push.host, PUSH_USERNAME: request.push.username, PUSH_PASSWORD: request.push.password } : {}),
    };
    const input = JSON.stringify({
      repo_url: request.repoUrl,
      git_sha: request.gitSha,
      service: service.service,
      context: service.context,
      dockerfile: service.dockerfile,
      image_ref: service.image_ref,
      platforms: request.platforms,
      push: request.push !== null,
    });
    return new Promise((resolve, reject) => {
      const child = spawn(this.options.command, this.options.args, { env, signal: request.signal, stdio: ['pipe', 'pipe', 'pipe'] });
      const lines: string[] = [];
      const follow = (stream: NodeJS.ReadableStream, name: 'stdout' | 'stderr') => {
        let rest = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => {
          const parts = (rest + chunk).split('\n');
          rest = parts.pop()!;
          for (const line of parts) {
            lines.push(line);
            request.log(line, name);
          }
        });
        stream.on('end', () => {
          if (!rest) return;
          lines.push(rest);
          request.log(rest, name);
        });
      };
      follow(child.stdout, 'stdout');
      follow(child.stderr, 'stderr');
      child.stdin.on('error', () => undefined);
      child.stdin.end(input);
      child.once('error', (err) => reject(request.signal.aborted ? failure('timeout_error', 'the build was stopped') : failure('resource_error', err.message)));
      child.once('close', (code) => {
        if (request.signal.aborted) return reject(failure('timeout_error', 'the build was stopped'));
        const last = lines.filter((l) => l.trim()).pop();
        if (code !== 0) return reject(failure('build_error', `${service.service}: ${last ?? `exited ${code}`}`));
        const answer = answerOf(last);
        if (!answer) return reject(failure('build_error', `${service.service}: the command's last line is not {"digest": "sha256:…"}`));
        resolve({
          service_name: service.service,
          image_ref: service.image_ref,
          digest: answer.digest,
          platforms: request.platforms,
          size_bytes: answer.size_bytes,
        });
      });
    });
  }
}

export default {
  kind: 'builder',
  name: 'command',
  options: Joi.object({
    command: Joi.string().min(1).required().description('The build command: a path, or a name on PATH.'),
    args: Joi.array().items(Joi.string()).default([]),
    env: Joi.object()
      .pattern(/^[A-Z_][A-Z0-9_]*$/, Joi.string())
      .default({})
      .description('Extra variables for the command (not secrets: config is not a vault).'),
    name: Joi.string()
      .pattern(/^[a-z][a-z0-9_-]*$/)
      .default('command')
      .description('The backend name runs record: the key of builds.builders this builder is configured under.'),
  }),
  create: (options: Options & { name: string }) => new CommandBuilder(options.name, options),
};
