/** `svc doc …`: versioned org documents (docs/resources.md). */
import { readFile, writeFile } from 'node:fs/promises';
import { intFlag, jsonObjectFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { ApiError, CliError, UsageError } from '../errors.ts';
import type { Schemas } from '../../client/index.ts';
import { api } from '../http.ts';
import { note, printDone, printJson, printList, printObject, write, type Column } from '../output.ts';
import { listOptions, listQuery, orgIdOf, projectFlag } from './access-common.ts';

export const DOC_USAGE = `usage: svc doc <command> [flags]

  list [--path PREFIX] [--include-deleted] [--project ID] [--limit N] [--offset N]
                           the org's documents, newest first; --path keeps those under PREFIX
  get DOC [--version N] [--output FILE]
                           the content to stdout (or FILE); --json: the document with its metadata
  put PATH (--file F | --content TEXT) [--metadata JSON] [--expected-version N] [--project ID]
                           creates the document at PATH, or writes a new version of it; with
                           --expected-version the write is refused (409) unless that is the current one.
                           --project: the project a new document belongs to (default: org-wide)
  delete DOC [--expected-version N]
  versions DOC [--limit N] [--offset N]

DOC is a path (/guides/style.md) or a document id (doc_...). Resource refs name documents as
org_docs:/<path>[@v<N>]. The org is --org, else the profile's org.

Examples:
  svc doc put /guides/style.md --file style.md
  svc doc get /guides/style.md --version 2`;

const DOC_FIELDS = ['id', 'path', 'project_id', 'version', 'current_version', 'content_hash', 'size_bytes', 'metadata', 'deleted', 'updated_at'];
const DOC_COLUMNS: Column[] = [
  { key: 'path' },
  { key: 'current_version', header: 'VERSION' },
  { key: 'size_bytes', header: 'SIZE' },
  { key: 'project_id', header: 'SCOPE', format: (v) => (v ? String(v) : 'org') },
  { key: 'updated_at', header: 'UPDATED' },
  { key: 'id' },
];
const VERSION_COLUMNS: Column[] = [
  { key: 'version' },
  { key: 'content_hash', header: 'HASH' },
  { key: 'size_bytes', header: 'SIZE' },
  { key: 'created_by', header: 'BY' },
  { key: 'created_at', header: 'CREATED' },
];

type Doc = Schemas['Doc'];

const isDocId = (ref: string) => /^doc_[0-9a-z]{26}$/.test(ref);

/** The document a DOC argument names: by id, or the live one at a path. */
async function find(ctx: Context, ref: string, version?: number): Promise<Doc> {
  if (isDocId(ref)) return api(ctx).GET('/orgs/{org_id}/docs/{doc_id}', { params: { org_id: orgIdOf(ctx, DOC_USAGE), doc_id: ref }, query: { version } });
  return api(ctx).GET('/orgs/{org_id}/docs/by-path', { params: { org_id: orgIdOf(ctx, DOC_USAGE) }, query: { path: ref, version } });
}

async function contentOf(values: { file?: string; content?: string }): Promise<string> {
  if ((values.file === undefined) === (values.content === undefined)) throw new UsageError('pass exactly one of --file or --content', DOC_USAGE);
  if (values.content !== undefined) return values.content;
  return readFile(values.file!, 'utf8').catch((e: Error) => {
    throw new CliError(`cannot read ${values.file}: ${e.message}`);
  });
}

export async function runDoc(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const org_id = () => orgIdOf(ctx, DOC_USAGE);
  switch (command) {
    case 'list': {
      const options = { ...listOptions, path: { type: 'string' }, 'include-deleted': { type: 'boolean' } } as const;
      const { values } = parseCommand(rest, options, DOC_USAGE, { min: 0, max: 0 });
      const query = {
        ...listQuery(values, DOC_USAGE),
        path: values.path,
        project_id: projectFlag(ctx),
        include_deleted: values['include-deleted'] || undefined,
      };
      printList(ctx, await api(ctx).GET('/orgs/{org_id}/docs', { params: { org_id: org_id() }, query }), DOC_COLUMNS, 'documents');
      return 0;
    }
    case 'get': {
      const options = { version: { type: 'string' }, output: { type: 'string', short: 'o' } } as const;
      const { values, positionals } = parseCommand(rest, options, DOC_USAGE, { min: 1, max: 1 });
      const doc = await find(ctx, positionals[0], intFlag(values.version, 'version', DOC_USAGE));
      if (values.output !== undefined && values.output !== '-') {
        await writeFile(values.output, doc.content).catch((e: Error) => {
          throw new CliError(`cannot write ${values.output}: ${e.message}`);
        });
        if (ctx.json) printJson(doc);
        else note(`Saved ${doc.path} version ${String(doc.version)} to ${values.output}.`);
        return 0;
      }
      if (ctx.json) printJson(doc);
      else process.stdout.write(doc.content);
      return 0;
    }
    case 'put': {
      const options = { file: { type: 'string' }, content: { type: 'string' }, metadata: { type: 'string' }, 'expected-version': { type: 'string' } } as const;
      const { values, positionals } = parseCommand(rest, options, DOC_USAGE, { min: 1, max: 1 });
      const [path] = positionals;
      const content = await contentOf(values);
      const metadata = jsonObjectFlag(values.metadata, '--metadata', DOC_USAGE);
      const expected = intFlag(values['expected-version'], 'expected-version', DOC_USAGE);
      let existing: Doc | null = null;
      try {
        existing = await find(ctx, path);
      } catch (e) {
        if (!(e instanceof ApiError && e.statusCode === 404) || isDocId(path)) throw e;
      }
      const body = existing
        ? await api(ctx).PUT('/orgs/{org_id}/docs/{doc_id}', {
            params: { org_id: org_id(), doc_id: existing.id },
            body: { content, metadata, expected_version: expected },
          })
        : await api(ctx).POST('/orgs/{org_id}/docs', { params: { org_id: org_id() }, body: { path, content, metadata, project_id: projectFlag(ctx) } });
      printObject(ctx, body, DOC_FIELDS);
      return 0;
    }
    case 'delete': {
      const { values, positionals } = parseCommand(rest, { 'expected-version': { type: 'string' } }, DOC_USAGE, { min: 1, max: 1 });
      const doc = await find(ctx, positionals[0]);
      const expected = intFlag(values['expected-version'], 'expected-version', DOC_USAGE);
      await api(ctx).DELETE('/orgs/{org_id}/docs/{doc_id}', { params: { org_id: org_id(), doc_id: doc.id }, query: { expected_version: expected } });
      printDone(ctx, `Deleted ${doc.path} (${doc.id}).`);
      return 0;
    }
    case 'versions': {
      const { values, positionals } = parseCommand(rest, listOptions, DOC_USAGE, { min: 1, max: 1 });
      const doc = await find(ctx, positionals[0]);
      const body = await api(ctx).GET('/orgs/{org_id}/docs/{doc_id}/versions', {
        params: { org_id: org_id(), doc_id: doc.id },
        query: listQuery(values, DOC_USAGE),
      });
      if (!ctx.json) write(`${doc.path} (${doc.id})`);
      printList(ctx, body, VERSION_COLUMNS, 'versions');
      return 0;
    }
    case undefined:
      throw new UsageError('missing doc command (list, get, put, delete, versions)', DOC_USAGE);
    default:
      throw new UsageError(`unknown doc command "${command}"`, DOC_USAGE);
  }
}
