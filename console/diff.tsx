import { useEffect, useState } from 'preact/hooks';
import { svc, type AttemptDiff, type AttemptDiffFile } from './api.ts';
import { ErrorNote } from './ui.tsx';

/**
 * What an attempt changed (GET /jobs/{id}/attempts/{n}/diff, docs/diffs.md): the files with their
 * +/- counts, then each file's hunks, additions and deletions coloured, with line numbers. The
 * patch is git's unified diff; this small parser only splits it into files, hunks and lines (no
 * diffing happens here). Everything is text nodes: nothing of a changed file is ever markup.
 */

type Kind = 'add' | 'del' | 'ctx' | 'note';
interface Line {
  kind: Kind;
  text: string;
  old: number | null;
  new: number | null;
}
interface Hunk {
  header: string;
  lines: Line[];
}
/** One `diff --git` block of the patch: its header lines (mode, index, rename, binary) and hunks. */
export interface FileBlock {
  /** From the `diff --git a/… b/…` line; the file list's names win (they are exact). */
  name: string;
  header: string[];
  hunks: Hunk[];
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

/** The unified diff, file by file; a patch cut short ends with the lines it has. */
export function parsePatch(patch: string): FileBlock[] {
  const blocks: FileBlock[] = [];
  let block: FileBlock | null = null;
  let hunk: Hunk | null = null;
  let oldNo = 0;
  let newNo = 0;
  const lines = patch.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (const text of lines) {
    if (text.startsWith('diff --git ')) {
      const m = / b\/(.*)$/.exec(text);
      block = { name: m ? m[1] : text.slice('diff --git '.length), header: [text], hunks: [] };
      blocks.push(block);
      hunk = null;
      continue;
    }
    if (!block) continue;
    const start = HUNK.exec(text);
    if (start) {
      oldNo = Number(start[1]);
      newNo = Number(start[2]);
      hunk = { header: text, lines: [] };
      block.hunks.push(hunk);
      continue;
    }
    if (!hunk) {
      block.header.push(text);
      continue;
    }
    if (text.startsWith('+')) hunk.lines.push({ kind: 'add', text: text.slice(1), old: null, new: newNo++ });
    else if (text.startsWith('-')) hunk.lines.push({ kind: 'del', text: text.slice(1), old: oldNo++, new: null });
    else if (text.startsWith('\\')) hunk.lines.push({ kind: 'note', text, old: null, new: null });
    else hunk.lines.push({ kind: 'ctx', text: text.slice(1), old: oldNo++, new: newNo++ });
  }
  return blocks;
}

const STATUS_LETTER: Record<string, string> = { added: 'A', modified: 'M', deleted: 'D', renamed: 'R' };
const nameOf = (f: AttemptDiffFile) => (f.old_path ? `${f.old_path} → ${f.path}` : f.path);
/** Files this long start folded, and so does everything after this many lines: a big diff stays usable. */
const FOLD_FILE_LINES = 400;
const FOLD_AFTER_LINES = 3000;

function Counts({ file }: { file: AttemptDiffFile }) {
  if (file.binary) return <span class="muted">binary</span>;
  return (
    <span class="counts">
      {file.additions > 0 && <span class="plus">+{file.additions}</span>} {file.deletions > 0 && <span class="minus">−{file.deletions}</span>}
    </span>
  );
}

function FileDiff({ index, file, block, open, cut }: { index: number; file: AttemptDiffFile | null; block: FileBlock | null; open: boolean; cut: boolean }) {
  const name = file ? nameOf(file) : (block?.name ?? '');
  const body = () => {
    if (!block) return <p class="muted">{cut ? 'Not in the patch: it was cut before this file (see the note above).' : 'No patch text for this file.'}</p>;
    if (!block.hunks.length) {
      const why = block.header.find((h) => h.startsWith('Binary files')) ?? (file?.status === 'renamed' ? 'Renamed without changes.' : 'No changed lines.');
      return <p class="muted">{why}</p>;
    }
    return (
      <div class="hunks-scroll">
        <table class="hunks">
          {block.hunks.map((h, i) => (
            <tbody key={i}>
              <tr class="hunk">
                <td colSpan={3}>{h.header}</td>
              </tr>
              {h.lines.map((l, j) => (
                <tr key={j} class={`dl ${l.kind}`}>
                  <td class="ln">{l.old ?? ''}</td>
                  <td class="ln">{l.new ?? ''}</td>
                  <td class="code">
                    <span class="sign">{l.kind === 'add' ? '+' : l.kind === 'del' ? '-' : ' '}</span>
                    {l.text}
                  </td>
                </tr>
              ))}
            </tbody>
          ))}
        </table>
      </div>
    );
  };
  return (
    <details class="file-diff" id={`diff-file-${index}`} data-file={file?.path ?? name} open={open}>
      <summary>
        <span class={`st st-${file?.status ?? 'modified'}`}>{STATUS_LETTER[file?.status ?? ''] ?? '?'}</span> <span class="mono">{name}</span>{' '}
        {file && <Counts file={file} />}
      </summary>
      {body()}
    </details>
  );
}

/** The diff of one attempt: summary, note, files, and the patch file by file. */
export function DiffView({ jobId, attemptNumber }: { jobId: string; attemptNumber: number }) {
  const [diff, setDiff] = useState<AttemptDiff | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    setDiff(null);
    setError(null);
    svc.GET('/jobs/{job_id}/attempts/{attempt_number}/diff', { params: { job_id: jobId, attempt_number: attemptNumber } }).then(
      (d) => live && setDiff(d),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [jobId, attemptNumber]);
  if (error) return <ErrorNote error={error} />;
  if (!diff) return <p class="muted">Loading the diff…</p>;
  const blocks = parsePatch(diff.patch ?? '');
  const { files, additions, deletions } = diff.stats;
  const count = Math.max(diff.files.length, blocks.length);
  let shown = 0;
  return (
    <div class="diff" data-testid="diff">
      <p class="diff-summary">
        {files === 0 ? 'No changes' : `${files} file${files === 1 ? '' : 's'} changed`}, <span class="plus">+{additions}</span>{' '}
        <span class="minus">−{deletions}</span> from <span class="mono">{diff.base_sha.slice(0, 12)}</span>
        {diff.head_sha && diff.head_sha !== diff.base_sha && (
          <>
            {' '}
            to <span class="mono">{diff.head_sha.slice(0, 12)}</span>
          </>
        )}
        {diff.uncommitted && ', with work left uncommitted'}
      </p>
      {diff.note && (
        <p class="note" role="note" data-testid="diff-note">
          {diff.note}
        </p>
      )}
      {diff.files.length > 0 && (
        <ul class="plain diff-files">
          {diff.files.map((f, i) => (
            <li key={f.path}>
              <span class={`st st-${f.status}`}>{STATUS_LETTER[f.status]}</span>{' '}
              <button
                class="link mono"
                onClick={() => {
                  const el = document.getElementById(`diff-file-${i}`) as HTMLDetailsElement | null;
                  if (!el) return;
                  el.open = true;
                  el.scrollIntoView({ block: 'start' });
                }}
              >
                {nameOf(f)}
              </button>{' '}
              <Counts file={f} />
            </li>
          ))}
        </ul>
      )}
      {Array.from({ length: count }, (_, i) => {
        const block = blocks[i] ?? null;
        const lines = block?.hunks.reduce((n, h) => n + h.lines.length, 0) ?? 0;
        const open = lines <= FOLD_FILE_LINES && shown + lines <= FOLD_AFTER_LINES;
        if (open) shown += lines;
        return <FileDiff key={i} index={i} file={diff.files[i] ?? null} block={block} open={open} cut={diff.truncated} />;
      })}
    </div>
  );
}
