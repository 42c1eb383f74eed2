import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * An event stream over the session cookie. The browser's EventSource reconnects by itself and sends
 * `Last-Event-ID`, so the server resumes after the last entry shown; an `end` event closes it.
 */
export function useStream(url: string | null, on: Record<string, (data: unknown, id: string) => void>): 'connecting' | 'live' | 'ended' | 'lost' {
  const [state, setState] = useState<'connecting' | 'live' | 'ended' | 'lost'>('connecting');
  const handlers = useRef(on);
  handlers.current = on;
  useEffect(() => {
    if (!url) return;
    setState('connecting');
    const source = new EventSource(url, { withCredentials: true });
    source.onopen = () => setState('live');
    source.onerror = () => setState(source.readyState === EventSource.CLOSED ? 'lost' : 'connecting');
    const listen = (type: string) =>
      source.addEventListener(type, (e) => {
        const event = e as MessageEvent<string>;
        handlers.current[type]?.(JSON.parse(event.data), event.lastEventId);
        if (type === 'end') {
          source.close();
          setState('ended');
        }
      });
    for (const type of new Set([...Object.keys(handlers.current), 'end'])) listen(type);
    return () => source.close();
  }, [url]);
  return state;
}

/** Calls `load` now and every `ms` while `active`; returns a way to reload at once. */
export function usePoll(load: () => Promise<unknown> | void, deps: unknown[], ms: number, active = true): () => void {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    void load();
    if (!active) return;
    const timer = setInterval(() => void load(), ms);
    return () => clearInterval(timer);
  }, [...deps, tick, active]);
  return () => setTick((t) => t + 1);
}
