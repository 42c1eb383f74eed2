/**
 * Builds the web console into dist/console-assets (run by `npm run build`, after tsc has built dist/):
 * 1. one minified bundle and one stylesheet, named by content hash, with esbuild (the API calls go
 *    through svc/client, whose types are committed in client/generated/: nothing is generated here);
 * 2. index.html naming them (no inline script or style: the page's CSP forbids both).
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = path.join(root, 'dist', 'console-assets');

rmSync(out, { recursive: true, force: true });
const result = await build({
  entryPoints: [path.join(root, 'console', 'main.tsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: 'app-[hash]',
  outdir: out,
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});
const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
const script = outputs.find((f) => f.endsWith('.js'));
const style = outputs.find((f) => f.endsWith('.css'));
if (!script || !style) throw new Error(`esbuild wrote ${outputs.join(', ')}: expected one .js and one .css`);
writeFileSync(
  path.join(out, 'index.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc console</title>
<link rel="stylesheet" href="/console/assets/${style}">
<script type="module" src="/console/assets/${script}"></script>
</head>
<body><div id="app"></div><noscript>The svc console needs JavaScript.</noscript></body>
</html>
`,
);
const bytes = result.metafile.outputs[Object.keys(result.metafile.outputs).find((f) => f.endsWith('.js'))!].bytes;
console.log(`console: ${script} ${(bytes / 1024).toFixed(1)} KiB, ${style}`);
