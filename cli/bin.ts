#!/usr/bin/env node
// The `svc` command: compiled to dist/cli/bin.js by `npm run build` (which `npm install` runs).
import { main } from './main.ts';

process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0); // e.g. `svc org list | head -1`
  throw error;
});

const code = await main(process.argv.slice(2));
// `svc serve` returns undefined: the server keeps the process alive until SIGTERM.
if (code !== undefined) process.stdout.write('', () => process.exit(code));
