import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { enc } from './api.ts';
import { useStream } from './live.ts';

/** A line of a log kept by seq: an attempt's, a build run's. */
export interface LogLine {
  seq: number;
  stream: string;
  line: string;
}

type StreamState = ReturnType<typeof useStream>;

/**
 * A log streamed as `log` events (data: the line with its seq) until one `end` event; the browser
 * resumes after the last seq shown when the connection comes back, and a line seen already is kept once.
 */
export function useLogStream(
  url: string | null,
  on: { line?: (line: LogLine) => void; end?: (data: unknown) => void },
): { lines: LogLine[]; state: StreamState } {
  const [lines, setLines] = useState<LogLine[]>([]);
  const seen = useRef(new Set<number>());
  const state = useStream(url, {
    log: (data) => {
      const line = data as LogLine;
      if (seen.current.has(line.seq)) return;
      seen.current.add(line.seq);
      setLines((all) => [...all, line]);
      on.line?.(line);
    },
    end: (data) => on.end?.(data),
  });
  return { lines, state };
}

const BUILD_ID = /\b(bld_[0-7][0-9a-hjkmnp-tv-z]{25})\b/;

/** Text with every build id in it made a link to that build's page. */
export function Linked({ text }: { text: string }) {
  const parts = text.split(BUILD_ID);
  if (parts.length === 1) return <>{text}</>;
  return (
    <>
      {parts.map((part, i) =>
        i % 2 ? (
          <a key={i} class="mono" href={`/console/builds/${enc(part)}`}>
            {part}
          </a>
        ) : (
          part
        ),
      )}
    </>
  );
}

/**
 * A log's lines, stderr and svc's own lines coloured apart, build ids linked. With `follow`, the box
 * keeps its newest line in view while the reader has not scrolled up.
 */
export function LogLines({ lines, follow = false }: { lines: LogLine[]; follow?: boolean }) {
  const box = useRef<HTMLPreElement>(null);
  const atEnd = useRef(true);
  useLayoutEffect(() => {
    const el = box.current;
    if (follow && el && atEnd.current) el.scrollTop = el.scrollHeight;
  }, [lines, follow]);
  return (
    <pre
      class="log"
      aria-live="polite"
      data-testid="log"
      ref={box}
      onScroll={(e) => {
        const el = e.currentTarget;
        atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
      }}
    >
      {lines.map((l) => (
        <div key={l.seq} class={`line ${l.stream}`}>
          <Linked text={l.line} />
        </div>
      ))}
    </pre>
  );
}
