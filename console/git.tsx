import type { Attempt, Job } from './api.ts';

type Git = Record<string, unknown> | null | undefined;
const short = (sha: unknown) => (typeof sha === 'string' ? sha.slice(0, 12) : '–');

/** What became of an attempt's changes: committed (pushed or not), left uncommitted and why, or none. */
export function workOf(git: Git): string {
  if (!git) return '';
  const uncommitted = git.uncommitted as { files: number; reason: string } | undefined;
  if (uncommitted) return `${uncommitted.files} file${uncommitted.files === 1 ? '' : 's'} changed, not committed: ${uncommitted.reason}`;
  const commits = (git.commits as string[] | undefined) ?? [];
  if (!commits.length) return 'no changes committed';
  return `committed ${commits.map(short).join(', ')}${git.pushed ? `, pushed to ${git.resolved_branch ?? 'the remote'}` : ', not pushed'}`;
}

/** The job's git controls as asked, and where its last successful attempt left the work. */
export function GitView({ job, newest }: { job: Job; newest: Attempt | null }) {
  const controls = (job.git ?? {}) as Record<string, unknown>;
  const resolved = job.resolved_git as Git;
  const row = (label: string, value: unknown) => (
    <>
      <dt>{label}</dt>
      <dd>{value === undefined || value === null || value === '' ? '–' : String(value)}</dd>
    </>
  );
  return (
    <dl>
      {row('Ref', controls.ref ?? 'the default branch')}
      {row('Branch', controls.branch)}
      {row('Commit', controls.commit ?? 'manual')}
      {row('Push', controls.push ?? 'never')}
      {resolved && row('Resolved', `${resolved.resolved_branch ?? resolved.resolved_ref ?? '–'} at ${short(resolved.resolved_sha)}`)}
      {newest?.git && row(`Work of attempt ${newest.attempt_number}`, workOf(newest.git as Git))}
    </dl>
  );
}
