import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Boom from '@hapi/boom';
import type { ResponseToolkit, ServerRoute } from '@hapi/hapi';

/**
 * Where `npm run build` writes the console (console/build.ts): dist/console-assets, found from the
 * compiled plugin (dist/plugins/console) and from the source one (plugins/console).
 */
const CANDIDATES = ['../../console-assets', '../../dist/console-assets'].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));

/** No inline script or style, nothing from another origin, no framing. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.map': 'application/json',
};

interface Asset {
  body: Buffer;
  type: string;
}

/** The built files, read once: index.html and the content-hashed bundles it names. */
export function loadAssets(): { dir: string; index: Buffer; files: Map<string, Asset> } | null {
  const dir = CANDIDATES.find((candidate) => existsSync(path.join(candidate, 'index.html')));
  if (!dir) return null;
  const files = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (type && name !== 'index.html') files.set(name, { body: readFileSync(path.join(dir, name)), type });
  }
  return { dir, index: readFileSync(path.join(dir, 'index.html')), files };
}

const PAGE_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  // The page is tiny and names the hashed bundles: always revalidated, so a new build shows at once.
  'cache-control': 'no-cache',
};

/**
 * `/` and every `/console/…` deep link answer the page (the client routes); `/console/assets/<file>`
 * the bundles, cacheable for a year since their names change with their content. Other paths stay
 * the API's, with its JSON 404.
 */
export function assetRoutes(): ServerRoute[] {
  const assets = loadAssets();
  const page = (_request: unknown, h: ResponseToolkit) => {
    if (!assets) throw Boom.serverUnavailable('the web console is not built on this server: run npm run build');
    const response = h.response(assets.index).type('text/html; charset=utf-8');
    for (const [name, value] of Object.entries(PAGE_HEADERS)) response.header(name, value);
    return response;
  };
  const options = { auth: false as const, description: 'The web console' };
  return [
    { method: 'GET', path: '/', options, handler: page },
    { method: 'GET', path: '/console/{path*}', options, handler: page },
    {
      method: 'GET',
      path: '/console/assets/{file}',
      options: { ...options, description: 'The web console: a built file' },
      handler: (request, h) => {
        const file = assets?.files.get(request.params.file as string);
        if (!file) throw Boom.notFound(`no console asset ${request.params.file}`);
        return h.response(file.body).type(file.type).header('cache-control', 'public, max-age=31536000, immutable').header('x-content-type-options', 'nosniff');
      },
    },
  ];
}
