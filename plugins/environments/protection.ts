import { Invalid } from '../../core/errors.ts';
import type { ReleaseRef } from '../../core/ports/environments.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import type { UserDirectory } from '../../core/ports/directory.ts';
import type { GroupMembership } from '../../core/ports/groups.ts';
import type { EnvironmentProtection, ProtectionReviewer } from '../../domain/manifest/types.ts';

const escape = (s: string) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

/** A branch or tag glob: `*` matches within a path segment, `**` across segments; the whole ref must match. */
export function refMatches(pattern: string, ref: string): boolean {
  const source = pattern
    .split('**')
    .map((part) => part.split('*').map(escape).join('[^/]*'))
    .join('.*');
  return new RegExp(`^${source}$`).test(ref);
}

const shortRef = (ref: string) => ref.replace(/^refs\/(heads|tags)\//, '');

/**
 * The branches and tags a deploy's release comes from, as far as svc knows them: the release's
 * tag, and the ref its manifest was synced from (for a deploy by git_sha, only that).
 */
export async function releaseRefs(manifests: ManifestReader, projectId: string, release: ReleaseRef): Promise<string[]> {
  const refs = release.tag ? [release.tag] : [];
  const manifest = release.manifest_hash ? await manifests.byHash(projectId, release.manifest_hash) : null;
  if (manifest?.ref && (!release.git_sha || manifest.git_sha === release.git_sha)) refs.push(shortRef(manifest.ref));
  return [...new Set(refs)];
}

/** allowed_refs: 422 naming the rule and what the release comes from when none of its refs matches. */
export async function checkAllowedRefs(manifests: ManifestReader, envName: string, protection: EnvironmentProtection, release: ReleaseRef, projectId: string) {
  const allowed = protection.allowed_refs;
  if (!allowed?.length) return;
  const refs = await releaseRefs(manifests, projectId, release);
  if (refs.some((ref) => allowed.some((p) => refMatches(p, ref)))) return;
  const from = refs.length ? `comes from ${refs.join(', ')}` : 'comes from no branch or tag svc knows of';
  throw new Invalid(`environment ${envName} is protected: protection.allowed_refs allows ${allowed.join(', ')}, and this deploy's release ${from}`, {
    fields: ['protection.allowed_refs'],
  });
}

export const reviewersOf = (p: EnvironmentProtection | null): ProtectionReviewer[] => p?.required_reviewers ?? [];
export const requiredApprovals = (p: EnvironmentProtection | null): number => (reviewersOf(p).length ? (p?.required_approvals ?? 1) : 0);

/** Whether the user is one of the protection's reviewers: named (by id or e-mail) or a member of a named group of the org. */
export async function isReviewer(
  d: { users: UserDirectory; groups: () => GroupMembership | null },
  protection: EnvironmentProtection | null,
  orgId: string,
  userId: string,
): Promise<boolean> {
  let email: string | null | undefined;
  for (const r of reviewersOf(protection)) {
    if ('user' in r) {
      if (r.user === userId) return true;
      if (r.user.includes('@')) {
        email ??= (await d.users.findById(userId))?.email ?? null;
        if (email && email.toLowerCase() === r.user.toLowerCase()) return true;
      }
    } else if (await d.groups()?.hasUser(orgId, r.group, userId)) return true;
  }
  return false;
}
