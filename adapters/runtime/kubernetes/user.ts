/**
 * Which user an attempt's pod runs as, by the rule every runtime follows (docs/worker.md, "The user
 * attempts run as"): the worker's `spec.user` (worker.run_as_uid/run_as_gid), else the server's own
 * user. Pods never run as root (runAsNonRoot), so a server running as root needs worker.run_as_uid.
 */
import type { ProcessSpec } from '../../../core/ports/runtime.ts';

export interface UnixUser {
  uid: number;
  gid: number;
}

/** The user this server runs as; null where the platform has no uids. */
export function serverUser(): UnixUser | null {
  return process.getuid && process.getgid ? { uid: process.getuid(), gid: process.getgid() } : null;
}

export function podUser(spec: ProcessSpec, server: UnixUser | null): UnixUser {
  if (spec.user) {
    if (spec.user.uid === 0)
      throw new Error('runtime kubernetes: attempts do not run as root in a pod (runAsNonRoot); set worker.run_as_uid (SVC_RUN_AS_UID) to another user');
    return { uid: spec.user.uid, gid: spec.user.gid };
  }
  if (!server) throw new Error('runtime kubernetes: the server has no uid to run pods as; set worker.run_as_uid (SVC_RUN_AS_UID)');
  if (server.uid === 0) {
    throw new Error(
      "runtime kubernetes: without worker.run_as_uid pods run as the server's own user, which is root, and pods do not run as root (runAsNonRoot); set worker.run_as_uid (SVC_RUN_AS_UID) to another user",
    );
  }
  return server;
}

/** Who `spec.files` are written as: the attempt's user when the server is root (it owns the workspace then), else the server itself. */
export function filesOwner(spec: ProcessSpec, server: UnixUser | null): UnixUser | null {
  return server?.uid === 0 && spec.user ? spec.user : null;
}

/**
 * Whether the pod runs as someone other than the workspace's owner: a server that is not root
 * cannot hand the workspace over, so it stays the server's own.
 */
export function workspaceNotHandedOver(spec: ProcessSpec, server: UnixUser | null): boolean {
  return !!server && server.uid !== 0 && !!spec.user && spec.user.uid !== server.uid;
}
