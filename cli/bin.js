#!/usr/bin/env node
// The `svc` entry point: load TypeScript through tsx, then hand the arguments to cli/main.ts.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

// Point tsx at the repository's tsconfig so the server's decorators compile the same from any working directory.
register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });

process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(0); // e.g. `svc org list | head -1`
  throw error;
});

const { main } = await import('./main.ts');
const code = await main(process.argv.slice(2));
// `svc serve` returns undefined: the server keeps the process alive until SIGTERM.
if (code !== undefined) process.stdout.write('', () => process.exit(code));
