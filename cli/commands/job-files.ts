/** `svc job attachments …`: files attached to a job, sent base64 so any bytes arrive exactly. */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { intFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { ApiError, CliError, UsageError } from '../errors.ts';
import { api, unauthorizedHint } from '../http.ts';
import { note, printDone, printList, printObject } from '../output.ts';

export const MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024;
const ATTACHMENT_FIELDS = ['id', 'job_id', 'name', 'mime_type', 'size_bytes', 'created_at'];

const MIME_BY_EXTENSION: Record<string, string> = {
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.css': 'text/css',
  '.json': 'application/json',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.xml': 'application/xml',
  '.js': 'text/javascript',
  '.ts': 'text/plain',
  '.py': 'text/x-python',
  '.sh': 'text/x-shellscript',
  '.diff': 'text/x-diff',
  '.patch': 'text/x-diff',
  '.log': 'text/plain',
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.svg': 'image/svg+xml',
  '.webp': 'image/webp',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
  '.tar': 'application/x-tar',
};

/** A MIME type from the file extension, or undefined (the server then serves application/octet-stream). */
export const guessMime = (file: string): string | undefined => MIME_BY_EXTENSION[extname(file).toLowerCase()];

/** GET raw bytes (the JSON client would parse them); errors read like every other command's. */
async function download(ctx: Context, job_id: string, name: string): Promise<Buffer> {
  const url = api(ctx).url('/jobs/{job_id}/attachments/{name}/content', { job_id, name });
  const headers: Record<string, string> = { accept: '*/*' };
  if (ctx.token) headers.authorization = `Bearer ${ctx.token}`;
  let response: Response;
  try {
    response = await fetch(url, { headers, signal: AbortSignal.timeout(120_000) });
  } catch (error) {
    const err = error as { cause?: { message?: string }; message?: string };
    throw new CliError(`cannot reach the svc API at ${ctx.apiUrl} (GET ${url.pathname}): ${err.cause?.message ?? err.message}`);
  }
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.ok) return bytes;
  let body: { message?: unknown } | undefined;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    body = undefined;
  }
  const message = typeof body?.message === 'string' && body.message ? body.message : response.statusText || 'request failed';
  throw new ApiError(response.status, message, body, response.status === 401 ? unauthorizedHint(ctx) : undefined);
}

export async function runAttachments(ctx: Context, args: string[], usage: string): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'list': {
      const options = { limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values, positionals } = parseCommand(rest, options, usage, { min: 1, max: 1 });
      const query = { limit: intFlag(values.limit, 'limit', usage), offset: intFlag(values.offset, 'offset', usage) };
      const body = await api(ctx).GET('/jobs/{job_id}/attachments', { params: { job_id: positionals[0] }, query });
      const columns = [{ key: 'name' }, { key: 'size_bytes', header: 'SIZE' }, { key: 'mime_type', header: 'TYPE' }, { key: 'created_at', header: 'CREATED' }];
      printList(ctx, body, columns, 'attachments');
      return 0;
    }
    case 'add': {
      const options = { name: { type: 'string' }, mime: { type: 'string' } } as const;
      const { values, positionals } = parseCommand(rest, options, usage, { min: 2, max: 2 });
      const [job, file] = positionals;
      const info = await stat(file).catch((e: Error) => {
        throw new CliError(`cannot read ${file}: ${e.message}`);
      });
      if (!info.isFile()) throw new CliError(`${file} is not a regular file`);
      if (info.size > MAX_ATTACHMENT_BYTES) {
        throw new CliError(`${file} is ${info.size} bytes; attachments are limited to ${MAX_ATTACHMENT_BYTES} bytes (5 MiB)`);
      }
      const content = await readFile(file);
      const body = {
        name: values.name ?? basename(file),
        mime_type: values.mime ?? guessMime(file),
        content: content.toString('base64'),
        encoding: 'base64' as const,
      };
      printObject(ctx, await api(ctx).POST('/jobs/{job_id}/attachments', { params: { job_id: job }, body }), ATTACHMENT_FIELDS);
      return 0;
    }
    case 'get': {
      const { values, positionals } = parseCommand(rest, { output: { type: 'string', short: 'o' } }, usage, { min: 2, max: 2 });
      const [job, name] = positionals;
      // --json: the metadata body; the bytes go to --output only.
      if (ctx.json) printObject(ctx, await api(ctx).GET('/jobs/{job_id}/attachments/{name}', { params: { job_id: job, name } }));
      if (ctx.json && values.output === undefined) return 0;
      const bytes = await download(ctx, job, name);
      if (values.output === undefined || values.output === '-') {
        process.stdout.write(bytes);
        return 0;
      }
      await writeFile(values.output, bytes).catch((e: Error) => {
        throw new CliError(`cannot write ${values.output}: ${e.message}`);
      });
      if (ctx.json) note(`Saved ${bytes.length} bytes to ${values.output}.`);
      else printDone(ctx, `Saved ${name} (${bytes.length} bytes) to ${values.output}.`);
      return 0;
    }
    case 'remove': {
      const { positionals } = parseCommand(rest, {}, usage, { min: 2, max: 2 });
      const [job, name] = positionals;
      await api(ctx).DELETE('/jobs/{job_id}/attachments/{name}', { params: { job_id: job, name } });
      printDone(ctx, `Removed attachment ${name} from job ${job}.`);
      return 0;
    }
    case undefined:
      throw new UsageError('missing attachments command (list, add, get, remove)', usage);
    default:
      throw new UsageError(`unknown attachments command "${command}"`, usage);
  }
}
