/** `svc thread list | create | show | post`: project threads and coordination threads (docs/threads.md). */
import { readFileSync } from 'node:fs';
import { intFlag, jsonObjectFlag, parseCommand } from '../args.ts';
import type { Schemas } from '../../client/index.ts';
import type { Context } from '../config.ts';
import { CliError, UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { cell, formatFields, printJson, printList, write, type Column } from '../output.ts';
import { requireProject } from './manifest.ts';

export const THREAD_USAGE = `usage: svc thread <command> [flags]

  list [--key K] [--job JOB_ID] [--limit N] [--offset N]
                                  threads of the project, newest first; --job: the coordination
                                  thread of that job's team
  create [--key K | --coord JOB_ID] [--title T]
                                  a new thread; with a key the project already has, that thread
                                  (a different --title is refused). --coord JOB_ID is the key
                                  coord:job:JOB_ID: the coordination thread of the team under JOB_ID
  show THREAD_ID [--after SEQ] [--limit N]
                                  the thread and its messages, oldest first (after message SEQ)
  post THREAD_ID (TEXT | --file F) [--kind K] [--reply-to MSG_ID] [--job JOB_ID] [--metadata JSON]
                                  post a message (--file - reads standard input). Kinds: message
                                  (default), or on coordination threads status, directive,
                                  question, update (default update)

The project comes from --project, else the profile's project.

Examples:
  svc thread create --key release-2.4 --title "Release 2.4"
  svc thread post THREAD_ID "build is green"`;

const THREAD_FIELDS = [
  'id',
  'project_id',
  'key',
  'title',
  'coordination',
  'job_id',
  'created_by_type',
  'created_by',
  'message_count',
  'last_message_at',
  'created_at',
];
const COLUMNS: Column[] = [
  { key: 'id' },
  { key: 'key' },
  { key: 'title' },
  { key: 'message_count', header: 'MESSAGES' },
  { key: 'last_message_at', header: 'LAST MESSAGE' },
  { key: 'created_at', header: 'CREATED' },
];

interface Message {
  id: string;
  seq: number;
  kind: string;
  body: string;
  author_type: string;
  author_id: string | null;
  job_id: string | null;
  reply_to: string | null;
  created_at: string;
}

/** One message for people: a heading line, then the body indented. */
export function formatMessage(m: Message): string {
  const about = m.job_id && m.job_id !== m.author_id ? ` about ${m.job_id}` : '';
  const reply = m.reply_to ? ` (reply to ${m.reply_to})` : '';
  const head = `#${m.seq} ${m.kind.toUpperCase()} ${m.author_type} ${m.author_id ?? '-'}${about} ${m.created_at}${reply}  ${m.id}`;
  return [head, ...m.body.split('\n').map((l) => `    ${l}`)].join('\n');
}

function bodyOf(text: string | undefined, file: string | undefined): string {
  if ((text === undefined) === (file === undefined)) throw new UsageError('pass the message text or --file F, not both', THREAD_USAGE);
  if (text !== undefined) return text;
  try {
    return readFileSync(file === '-' ? 0 : file!, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

export async function runThread(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'list': {
      const options = { key: { type: 'string' }, job: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values: v } = parseCommand(rest, options, THREAD_USAGE, { min: 0, max: 0 });
      const query = { key: v.key, job_id: v.job, limit: intFlag(v.limit, 'limit', THREAD_USAGE), offset: intFlag(v.offset, 'offset', THREAD_USAGE) };
      printList(
        ctx,
        await api(ctx).GET('/projects/{project_id}/threads', { params: { project_id: requireProject(ctx, THREAD_USAGE) }, query }),
        COLUMNS,
        'threads',
      );
      return 0;
    }
    case 'create': {
      const options = { key: { type: 'string' }, coord: { type: 'string' }, title: { type: 'string' } } as const;
      const { values: v } = parseCommand(rest, options, THREAD_USAGE, { min: 0, max: 0 });
      if (v.key !== undefined && v.coord !== undefined) throw new UsageError('pass --key or --coord, not both', THREAD_USAGE);
      const key = v.coord !== undefined ? `coord:job:${v.coord}` : v.key;
      const thread = await api(ctx).POST('/projects/{project_id}/threads', {
        params: { project_id: requireProject(ctx, THREAD_USAGE) },
        body: { key, title: v.title },
      });
      if (ctx.json) printJson(thread);
      else write(formatFields(THREAD_FIELDS.map((k) => [k, (thread as Record<string, unknown>)[k]])));
      return 0;
    }
    case 'show': {
      const options = { after: { type: 'string' }, limit: { type: 'string' } } as const;
      const { values: v, positionals } = parseCommand(rest, options, THREAD_USAGE, { min: 1, max: 1 });
      const thread = await api(ctx).GET('/projects/{project_id}/threads/{thread_id}', {
        params: { project_id: requireProject(ctx, THREAD_USAGE), thread_id: positionals[0] },
      });
      const query = { after: intFlag(v.after, 'after', THREAD_USAGE), limit: intFlag(v.limit, 'limit', THREAD_USAGE) ?? 200 };
      const messages = await api(ctx).GET('/projects/{project_id}/threads/{thread_id}/messages', {
        params: { project_id: requireProject(ctx, THREAD_USAGE), thread_id: positionals[0] },
        query,
      });
      if (ctx.json) {
        printJson({ thread, messages });
        return 0;
      }
      const lines = [formatFields(THREAD_FIELDS.map((k) => [k, (thread as Record<string, unknown>)[k]])), ''];
      if (messages.data.length === 0) lines.push('No messages.');
      for (const m of messages.data) lines.push(formatMessage(m), '');
      const last = messages.data.at(-1);
      if (messages.pagination?.has_more && last) lines.push(`More messages: svc thread show ${cell(thread.id)} --after ${last.seq}`);
      write(lines.join('\n').trimEnd());
      return 0;
    }
    case 'post': {
      const options = {
        kind: { type: 'string' },
        'reply-to': { type: 'string' },
        job: { type: 'string' },
        metadata: { type: 'string' },
        file: { type: 'string' },
      } as const;
      const { values: v, positionals } = parseCommand(rest, options, THREAD_USAGE, { min: 1, max: 2 });
      const body = {
        body: bodyOf(positionals[1], v.file),
        kind: v.kind as Schemas['PostThreadMessage']['kind'],
        reply_to: v['reply-to'],
        job_id: v.job,
        metadata: jsonObjectFlag(v.metadata, '--metadata', THREAD_USAGE),
      };
      const message = await api(ctx).POST('/projects/{project_id}/threads/{thread_id}/messages', {
        params: { project_id: requireProject(ctx, THREAD_USAGE), thread_id: positionals[0] },
        body,
      });
      if (ctx.json) printJson(message);
      else write(formatMessage(message));
      return 0;
    }
    default:
      throw new UsageError(command === undefined ? 'missing thread command' : `unknown thread command "${command}"`, THREAD_USAGE);
  }
}
