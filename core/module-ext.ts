import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `.ts` when svc runs from its sources (tsx: tests, development), `.js` when it runs compiled
 * (`npm start`, the `svc` command): what a file loaded by name from svc's own tree ends with.
 */
export const MODULE_EXT = path.extname(fileURLToPath(import.meta.url));
