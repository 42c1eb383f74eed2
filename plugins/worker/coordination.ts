import path from 'node:path';
import type { AttemptWork } from '../../core/ports/attempts.ts';
import { writeContained } from '../../core/contained-fs.ts';
import type { CoordinationInbox, CoordinationThreads, InboxMessage } from '../../core/ports/threads.ts';

/** Where the inbox goes in the workspace (git-ignored by the worker, see git.ts). */
export const INBOX_PATH = path.join('.svc', 'coordination-inbox.md');

const when = (d: Date) => new Date(d).toISOString();
const author = (m: InboxMessage) => `${m.author_type === 'service_account' ? 'service account' : m.author_type}${m.author_id ? ` ${m.author_id}` : ''}`;
const quoted = (body: string) =>
  body
    .split('\n')
    .map((l) => (l ? `> ${l}` : '>'))
    .join('\n');
const firstLine = (body: string) => {
  const line = body.trim().split('\n')[0];
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
};
const ref = (m: InboxMessage) => `#${m.seq} (${m.id}) from ${author(m)}, ${when(m.created_at)}`;

/** The inbox as markdown: where to answer, directives and open questions first, then every message shown, in order. */
export function renderInbox(inbox: CoordinationInbox, work: AttemptWork): string {
  const { thread, messages } = inbox;
  const shown = messages.length < thread.message_count ? `the latest ${messages.length} of ${thread.message_count}` : `${messages.length}`;
  const post = `$SVC_API_URL/projects/${work.project.id}/threads/${thread.id}/messages`;
  const lines = [
    '# Coordination inbox',
    '',
    `Thread: ${thread.key ? `\`${thread.key}\`` : '(no key)'} (${thread.id})${thread.title ? `: ${thread.title}` : ''}`,
    `Regenerated at the start of attempt ${work.attempt.attempt_number} of job ${work.job.id}. Messages: ${shown}.`,
    '',
    `Answer in the thread: \`POST ${post}\` with \`Authorization: Bearer $SVC_JOB_TOKEN\` and a JSON body`,
    '`{"kind": "update" | "question" | "status", "body": "...", "reply_to": "<message id, when answering>"}`.',
    '',
  ];
  const directives = messages.filter((m) => m.kind === 'directive');
  lines.push('## Directives', '');
  if (directives.length === 0) lines.push('None.', '');
  for (const m of directives) lines.push(`- **DIRECTIVE** ${ref(m)}: ${firstLine(m.body)}`);
  if (directives.length > 0) lines.push('');
  lines.push('## Open questions', '');
  if (inbox.open_questions.length === 0) lines.push('None.', '');
  for (const m of inbox.open_questions) lines.push(`- **QUESTION** ${ref(m)}: ${firstLine(m.body)}`);
  if (inbox.open_questions.length > 0) lines.push('');
  lines.push('## Messages', '');
  if (messages.length === 0) lines.push('No messages yet.', '');
  const seqOf = new Map(messages.map((m) => [m.id, m.seq]));
  for (const m of messages) {
    const answers = m.reply_to ? `, answering ${seqOf.has(m.reply_to) ? `#${seqOf.get(m.reply_to)}` : m.reply_to}` : '';
    const about = m.job_id && m.job_id !== m.author_id ? `, about job ${m.job_id}` : '';
    lines.push(
      `### #${m.seq} ${m.kind.toUpperCase()} from ${author(m)}${about}${answers}, ${when(m.created_at)}`,
      '',
      `Message id: ${m.id}`,
      '',
      quoted(m.body),
      '',
    );
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

/**
 * Writes `<workspace>/.svc/coordination-inbox.md` for a job that coordinates through a thread;
 * returns the number of messages shown, or null when the job has no thread (no file is written). A
 * link the checkout put on the way is refused (UnsafePath), never followed.
 */
export async function writeCoordinationInbox(threads: CoordinationThreads | null, work: AttemptWork, workspace: string): Promise<number | null> {
  if (!threads) return null;
  const inbox = await threads.inbox({ id: work.job.id, project_id: work.project.id, parent_id: work.job.parent_id, hints: work.job.hints });
  if (!inbox) return null;
  await writeContained(workspace, INBOX_PATH, renderInbox(inbox, work));
  return inbox.messages.length;
}
