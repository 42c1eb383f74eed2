import type { InjectionToken } from 'tsyringe';
import type { SandboxView } from '../sandbox.ts';

/** Where an attempt's process runs: this machine, a Docker container, a Kubernetes pod. */
export interface ProcessSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Files to write before starting, relative to cwd (harness config files). */
  files?: Record<string, string>;
  timeoutMs?: number;
  /** Compute SKU such as job.c1; runtimes map it to their own limits. */
  resourceClass?: string;
  /**
   * The user to run as (worker.run_as_uid/run_as_gid); absent: the server's own. A root server has
   * handed the workspace to it. The local runtime can switch only as root; containers always run as it.
   */
  user?: { uid: number; gid: number };
  /**
   * Run inside the attempt sandbox (core/sandbox.ts), seeing only these host paths beside the
   * system's binaries. The local runtime honours it; a container is a sandbox of its own.
   */
  sandbox?: Omit<SandboxView, 'user'>;
}

export interface OutputLine {
  stream: 'stdout' | 'stderr';
  line: string;
}

export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
}

export interface RunningProcess {
  /** Lines as the process writes them. */
  lines(): AsyncIterable<OutputLine>;
  /** Resolves when the process and everything it started have ended. */
  exited: Promise<ProcessExit>;
  /** Ends the whole process tree. */
  kill(): Promise<void>;
}

export interface Runtime {
  readonly name: string;
  /**
   * Set by a runtime whose processes find their commands somewhere other than this machine (an
   * image: docker, kubernetes), naming where for messages ("the image svc-worker-clis:local"). The
   * worker then does not look for a harness's binary here: the container says when it is missing.
   */
  readonly commandsIn?: string;
  start(spec: ProcessSpec): Promise<RunningProcess>;
}

/** The runtime the worker role uses; the kernel builds it from `adapters.runtime` unless one is registered already (KernelOptions.configure). */
export const RuntimeToken = Symbol('Runtime') as InjectionToken<Runtime>;
