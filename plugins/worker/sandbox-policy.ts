import { NOBODY, sandboxUnavailable, type SandboxNetwork, type SandboxSettings } from '../../core/sandbox.ts';
import { isRoot, type RunAs } from './run-as.ts';

/** What `worker.sandbox` comes to on this machine, decided once at start. */
export interface AttemptSandbox {
  /** Attempts (and the worker's git on touched checkouts) run in the sandbox. */
  on: boolean;
  /** Why no attempt may run here (production, or mode on, without a working sandbox); null: they may. */
  refusal: string | null;
  /** Said at start and in every attempt's log when attempts run unsandboxed. */
  warning: string | null;
  network: SandboxNetwork;
  readOnly: string[];
}

const INSTALL = 'install bubblewrap (apt-get install bubblewrap)';

/**
 * auto: the sandbox whenever it works here; without it production refuses to run attempts and
 * development runs them unsandboxed, saying so. on: required. off: never (said in every attempt's log).
 */
export async function decideSandbox(settings: SandboxSettings, env: string, probe = sandboxUnavailable): Promise<AttemptSandbox> {
  const base = { network: settings.network, readOnly: settings.read_only };
  if (settings.mode === 'off')
    return { ...base, on: false, refusal: null, warning: 'the attempt sandbox is off (worker.sandbox.mode off): attempts run unsandboxed on this machine' };
  const missing = await probe();
  if (!missing) return { ...base, on: true, refusal: null, warning: null };
  if (settings.mode === 'on') return { ...base, on: false, refusal: `worker.sandbox.mode is on, but ${missing}`, warning: null };
  if (env === 'production')
    return {
      ...base,
      on: false,
      refusal: `no attempt sandbox: ${missing}. In production attempts do not run unsandboxed: ${INSTALL}, or set worker.sandbox.mode off to accept running them on the host`,
      warning: null,
    };
  return {
    ...base,
    on: false,
    refusal: null,
    warning: `no attempt sandbox (${missing}): attempts run unsandboxed and can read what the server's user can; ${INSTALL}`,
  };
}

/**
 * The user an attempt runs as: worker.run_as_uid when set; else, on a root server with the sandbox
 * on, nobody (inside the sandbox nothing runs as root); else the server's own user (null).
 */
export function attemptUser(runAs: RunAs | null, sandbox: AttemptSandbox): RunAs | null {
  if (runAs) return runAs;
  return sandbox.on && isRoot() ? { ...NOBODY } : null;
}
