import type { Server } from '@hapi/hapi';
import { authenticated } from './access.ts';

const BODY = { ok: true } as const;

/**
 * The framework's own limit, for `npm run bench -- hot`: a constant body behind the same bearer
 * scheme as every API route (no target, so no grant and no database once the caller is known),
 * and the same without authentication. Registered only when `server.bench_routes` is on; not in
 * /openapi.json (no `api` tag).
 */
export function installBenchRoutes(server: Server): void {
  server.route([
    { method: 'GET', path: '/bench/bare', options: { plugins: authenticated }, handler: () => BODY },
    { method: 'GET', path: '/bench/public', options: { auth: false }, handler: () => BODY },
  ]);
}
