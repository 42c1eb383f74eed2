import type { DomainPlugin } from '../../core/http/plugins.ts';
import { authenticated } from '../../core/http/access.ts';

const BODY = { ok: true } as const;

/**
 * The framework's own limit, for `npm run bench -- hot`: a constant body behind the same bearer
 * scheme as every API route (no target, so no grant and no database once the caller is known),
 * and the same without authentication. Loaded only when `server.bench_routes` is on (core/http/server.ts),
 * never named in `plugins:`; not in /openapi.json (no `api` tag).
 */
export const plugin: DomainPlugin = {
  name: 'bench',
  register(server) {
    server.route([
      { method: 'GET', path: '/bench/bare', options: { plugins: authenticated }, handler: () => BODY },
      { method: 'GET', path: '/bench/public', options: { auth: false }, handler: () => BODY },
    ]);
  },
};
