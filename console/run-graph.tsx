import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { enc, type RunStep } from './api.ts';
import { Badge } from './ui.tsx';

/** Steps in layers by depends_on: a step sits one layer after the deepest step it waits for. */
function layers(steps: RunStep[]): RunStep[][] {
  const depth = new Map<string, number>();
  const of = (s: RunStep, seen: Set<string>): number => {
    if (depth.has(s.name)) return depth.get(s.name)!;
    if (seen.has(s.name)) return 0;
    seen.add(s.name);
    const d = Math.max(-1, ...(s.depends_on ?? []).map((n) => of(steps.find((x) => x.name === n) ?? s, seen))) + 1;
    depth.set(s.name, d);
    return d;
  };
  const out: RunStep[][] = [];
  for (const s of steps) (out[of(s, new Set())] ??= []).push(s);
  return out.filter(Boolean);
}

interface Edge {
  key: string;
  d: string;
  status: string;
}

/** The run's steps in layers, with an arrow from each step to every step that waits for it (drawn from where the boxes landed). */
export function RunGraph({ steps }: { steps: RunStep[] }) {
  const box = useRef<HTMLDivElement>(null);
  const [edges, setEdges] = useState<Edge[]>([]);
  const [size, setSize] = useState({ width: 0, height: 0 });
  useLayoutEffect(() => {
    const root = box.current;
    if (!root) return;
    const measure = () => {
      const base = root.getBoundingClientRect();
      const rect = (name: string) => root.querySelector(`[data-step="${CSS.escape(name)}"]`)?.getBoundingClientRect();
      const out: Edge[] = [];
      for (const s of steps)
        for (const from of s.depends_on ?? []) {
          const a = rect(from);
          const b = rect(s.name);
          if (!a || !b) continue;
          const x1 = a.right - base.left + root.scrollLeft;
          const y1 = a.top + a.height / 2 - base.top;
          const x2 = b.left - base.left + root.scrollLeft;
          const y2 = b.top + b.height / 2 - base.top;
          const mid = (x1 + x2) / 2;
          out.push({
            key: `${from}->${s.name}`,
            d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`,
            status: steps.find((x) => x.name === from)?.status ?? '',
          });
        }
      setEdges(out);
      setSize({ width: root.scrollWidth, height: root.scrollHeight });
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(root);
    return () => observer.disconnect();
  }, [steps]);
  return (
    <div class="graph" ref={box}>
      <svg class="edges" width={size.width} height={size.height} aria-hidden="true">
        <defs>
          <marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="8" markerHeight="8" orient="auto">
            <path d="M0,0 L8,4 L0,8 z" />
          </marker>
        </defs>
        {edges.map((e) => (
          <path key={e.key} d={e.d} class={`edge st-${e.status}`} data-edge={e.key} marker-end="url(#arrow)" />
        ))}
      </svg>
      {layers(steps).map((layer, i) => (
        <div class="layer" key={i}>
          {layer.map((s) => (
            <div class={`step st-${s.status}`} key={s.name} data-step={s.name} data-status={s.status}>
              <strong>{s.name}</strong>
              <Badge value={s.status} />
              {s.approval && <span class="muted">approval</span>}
              {s.depends_on?.length ? <span class="muted">after {s.depends_on.join(', ')}</span> : null}
              {s.job_id && <a href={`/console/jobs/${enc(s.job_id)}`}>job</a>}
            </div>
          ))}
        </div>
      ))}
    </div>
  );
}
