import { useEffect, useState } from 'preact/hooks';

/** Client-side paths: `/` and `/console/…` (the server answers the page for both). */
export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.dispatchEvent(new Event('svc:navigate'));
}

export function usePath(): string {
  const [path, setPath] = useState(location.pathname + location.search);
  useEffect(() => {
    const update = () => setPath(location.pathname + location.search);
    window.addEventListener('popstate', update);
    window.addEventListener('svc:navigate', update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener('svc:navigate', update);
    };
  }, []);
  return path;
}

/** Matches `/console/jobs/:job` against a path: the named parts, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const got = path.split('?')[0].split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(':')) params[want[i].slice(1)] = decodeURIComponent(got[i]);
    else if (want[i] !== got[i]) return null;
  }
  return params;
}

/** A link that routes in the page (and still opens a new tab with a modifier key). */
export function onLink(e: MouseEvent): void {
  const a = (e.target as HTMLElement).closest('a');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const href = a.getAttribute('href');
  if (!href || !href.startsWith('/') || a.target) return;
  e.preventDefault();
  navigate(href);
}
