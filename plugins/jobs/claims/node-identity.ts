import { randomUUID } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { processExists } from '../../../core/process.ts';

const PREFIX = 'orchestrator';

/**
 * The PID namespace this process runs in: two processes with the same host name but other PID
 * namespaces (containers on the host network) cannot see each other's PIDs, so neither judges the other.
 */
function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? 'ns';
  } catch {
    return 'ns';
  }
}

/** This process as the owner of the leases it claims: `orchestrator:<host>:<pid namespace>:<pid>:<random>`. */
export function leaseOwnerName(): string {
  return `${PREFIX}:${hostname()}:${pidNamespace()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** The prefix every lease owner of this host and PID namespace starts with. */
export function localOwnerPrefix(): string {
  return `${PREFIX}:${hostname()}:${pidNamespace()}:`;
}

/**
 * Whether `owner` is an earlier orchestrator on this host and PID namespace that is gone: its
 * process no longer exists (or is this very process, started again under the same PID).
 */
export function isDeadPredecessor(owner: string, self: string): boolean {
  if (owner === self || !owner.startsWith(localOwnerPrefix())) return false;
  const pid = Number(owner.slice(localOwnerPrefix().length).split(':')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  return pid === process.pid || !processExists(pid);
}
