import { useEffect, useState } from 'preact/hooks';
import { svc, enc, type BuildRun } from './api.ts';
import { ACTIVE } from './builds.tsx';
import { LogLines, useLogStream, type LogLine } from './log-view.tsx';
import { ErrorNote, Section } from './ui.tsx';

/** Lines a page of an ended run's log holds. */
const PAGE = 500;

/**
 * A build run's builder output. A run still pending or building is followed live (`?follow=true`:
 * `log` events, then `end`, resumed by Last-Event-ID); a run that had ended when the page opened is
 * read a page at a time. Mounted per run (keyed by its id), so it chooses once.
 */
export function BuildLog({ buildId, run, onEnd }: { buildId: string; run: BuildRun; onEnd: () => void }) {
  const [live] = useState(ACTIVE.includes(run.status));
  const base = `/builds/${enc(buildId)}/logs?run_id=${enc(run.id)}`;
  const streamed = useLogStream(live ? `${base}&follow=true` : null, { end: () => onEnd() });
  const paged = usePagedLog(live ? null : { build_id: buildId, run_id: run.id });
  const lines = live ? streamed.lines : paged.lines;
  const state = live ? streamed.state : 'ended';
  return (
    <Section title={`Log of run ${run.id}`} actions={<span class={`stream s-${state}`}>{live ? state : `${paged.total} lines`}</span>}>
      <ErrorNote error={paged.error} />
      {!lines.length && <p class="muted">{emptyLog(run, live && state !== 'ended')}</p>}
      {!!lines.length && <LogLines lines={lines} follow={live} />}
      {paged.more && (
        <button onClick={paged.next} disabled={paged.busy}>
          Show the next {Math.min(PAGE, paged.total - lines.length)} of {paged.total - lines.length} more lines
        </button>
      )}
    </Section>
  );
}

/** What a run without lines says. */
function emptyLog(run: BuildRun, open: boolean): string {
  if (run.reused_from) return `Nothing was built: this run reused the images of run ${run.reused_from}.`;
  if (run.status === 'pending') return 'Waiting for a worker to start the build…';
  return open ? 'No output yet…' : 'No output.';
}

/** An ended log a page at a time, after the last seq read. */
function usePagedLog(log: { build_id: string; run_id: string } | null) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [total, setTotal] = useState(0);
  const [more, setMore] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const load = async (after: LogLine[]) => {
    if (!log) return;
    setBusy(true);
    try {
      const page = await svc.GET('/builds/{build_id}/logs', {
        params: { build_id: log.build_id },
        query: { run_id: log.run_id, limit: PAGE, after_seq: after.at(-1)?.seq ?? 0 },
      });
      if (typeof page === 'string') throw new Error('the server answered a page of log lines with text');
      const all = [...after, ...page.data];
      setLines(all);
      setTotal(after.length + (page.pagination?.total ?? 0));
      setMore(page.pagination?.has_more ?? false);
      setError(null);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => void load([]), [log?.build_id, log?.run_id]);
  return { lines, total, more, busy, error, next: () => void load(lines) };
}
