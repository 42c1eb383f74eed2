/**
 * The OpenAPI document as its consumers meet it (docs/openapi.md): Redocly's recommended rules,
 * `svc/client` with the types openapi-typescript generates, compiled under `tsc --strict`, and the
 * committed types (client/generated/openapi.ts) still what the document generates. Used by
 * test/http/openapi-contract.test.ts and by `npm run openapi:check`, which prints the counts.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { loadConfig } from '../../core/config/load.ts';
import { openApiDocument } from '../../core/openapi-document.ts';
import { clientTypes, GENERATED_CLIENT } from '../../scripts/generate-client.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const require = createRequire(import.meta.url);

/** The document `svc openapi` prints: the default config, every built-in plugin. */
export const publishedDocument = () => openApiDocument(loadConfig({ env: {} }));

/** How to run Redocly's CLI: the devDependency when installed, else npx fetches the same version. */
export interface Redocly {
  command: string;
  args: string[];
  how: string;
}

const REDOCLY_ENV = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };

/** The Redocly CLI, or why it cannot be had (not installed, and npx could not install it). */
export function findRedocly(): Redocly | { unavailable: string } {
  const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[
    '@redocly/cli'
  ];
  try {
    const pkg = require.resolve('@redocly/cli/package.json');
    const bin = (JSON.parse(readFileSync(pkg, 'utf8')) as { bin: Record<string, string> }).bin.redocly;
    return { command: process.execPath, args: [path.join(path.dirname(pkg), bin)], how: `@redocly/cli from node_modules` };
  } catch {
    // not installed (package.json names it: `npm install`): npx can fetch it
  }
  const spec = `@redocly/cli@${version ?? 'latest'}`;
  const probe = spawnSync('npx', ['--yes', spec, '--version'], { encoding: 'utf8', env: REDOCLY_ENV, timeout: 180_000 });
  if (probe.status !== 0) {
    const said = (probe.stderr || String(probe.error ?? 'no output'))
      .split('\n')
      .filter((line) => line.trim() && !/complete log of this run/.test(line))
      .slice(0, 2)
      .join('; ');
    return { unavailable: `${spec} is not in node_modules and npx could not install it (${said})` };
  }
  return { command: 'npx', args: ['--yes', spec], how: `${spec} through npx (not in node_modules: run npm install)` };
}

export interface LintProblem {
  ruleId: string;
  severity: string;
  message: string;
  location: { pointer: string }[];
}

/** `redocly lint --extends recommended` of the document: its totals and each problem. */
export function lint(redocly: Redocly, document: object): { errors: number; warnings: number; problems: LintProblem[] } {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-openapi-lint-'));
  try {
    const file = path.join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document, null, 2));
    const run = spawnSync(redocly.command, [...redocly.args, 'lint', file, '--extends', 'recommended', '--format', 'json'], {
      encoding: 'utf8',
      env: REDOCLY_ENV,
      maxBuffer: 64 << 20,
      timeout: 180_000,
    });
    let report: { totals: { errors: number; warnings: number }; problems: LintProblem[] };
    try {
      report = JSON.parse(run.stdout);
    } catch {
      throw new Error(`redocly lint did not report (exit ${run.status}): ${run.stderr}`);
    }
    return { errors: report.totals.errors, warnings: report.totals.warnings, problems: report.problems };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A program using `svc/client` as a consumer would: the wrapper's calls and the generated types. */
const CONSUMER = `import { createClient, SvcApiError, type components, type operations, type paths } from './client/index.ts';
type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
export type Job = components['schemas']['Job'];
export type CreateJobBody = Json<paths['/projects/{project_id}/jobs']['post']['requestBody']>;
export type JobList = Json<operations['listJobs']['responses'][200]>;
export async function firstReadyJob(baseUrl: string, token: string, project_id: string): Promise<Job | undefined> {
  const svc = createClient({ baseUrl, token });
  const body: CreateJobBody = { description: 'fix the flaky test' };
  const created: Job = await svc.POST('/projects/{project_id}/jobs', { params: { project_id }, body });
  const list: JobList = await svc.GET('/projects/{project_id}/jobs', { params: { project_id }, query: { phase: 'ready', limit: 10 } });
  try {
    await svc.PATCH('/jobs/{job_id}', { params: { job_id: created.id }, body: { phase: 'cancelled' } });
  } catch (e) {
    if (!(e instanceof SvcApiError) || e.status !== 409) throw e;
  }
  return list.data[0];
}
`;

/** The files of `svc/client` copied as they are, with the generated types given (fresh, or the committed ones). */
const CLIENT_FILES = ['client/index.ts', 'client/types.ts'];

/**
 * `svc/client` with openapi-typescript's types of the document, and a small program using it,
 * compiled under `tsc --strict` (no skipLibCheck, nothing rewritten): the diagnostics.
 */
export async function compileClient(document: object): Promise<{ lines: number; errors: string[] }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-openapi-client-'));
  try {
    const types = await clientTypes(document);
    mkdirSync(path.join(dir, 'client', 'generated'), { recursive: true });
    writeFileSync(path.join(dir, 'client', 'generated', 'openapi.ts'), types);
    for (const file of CLIENT_FILES) copyFileSync(path.join(ROOT, file), path.join(dir, file));
    writeFileSync(path.join(dir, 'consumer.ts'), CONSUMER);
    const program = ts.createProgram([path.join(dir, 'consumer.ts')], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      allowImportingTsExtensions: true,
      types: [],
    });
    const errors = ts
      .getPreEmitDiagnostics(program)
      .map(
        (d) =>
          `${d.file ? `${path.relative(dir, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1} ` : ''}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
      );
    return { lines: types.split('\n').length, errors };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Whether client/generated/openapi.ts is what `npm run client:generate` would write now. */
export async function generatedClientIsCurrent(document: object): Promise<boolean> {
  return existsSync(GENERATED_CLIENT) && readFileSync(GENERATED_CLIENT, 'utf8') === (await clientTypes(document));
}

/** `npm run openapi:check`: the counts, and exit 1 on any problem. */
async function main(): Promise<void> {
  const document = await publishedDocument();
  const schemas = Object.keys((document.components as { schemas: object }).schemas);
  console.log(
    `schemas: ${schemas.length}, anonymous (Model<n>): ${schemas.filter((n) => /^Model\d+$/.test(n)).length}, x-alt-definitions: ${'x-alt-definitions' in document}`,
  );
  let failed = false;
  const redocly = findRedocly();
  if ('unavailable' in redocly) {
    console.log(`redocly: not run: ${redocly.unavailable}`);
    failed = true;
  } else {
    const result = lint(redocly, document);
    console.log(`redocly (recommended, ${redocly.how}): ${result.errors} errors, ${result.warnings} warnings`);
    for (const p of result.problems) console.log(`  ${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}`);
    failed ||= result.errors + result.warnings > 0;
  }
  const client = await compileClient(document);
  console.log(`svc/client with openapi-typescript's types (${client.lines} lines) under tsc --strict: ${client.errors.length} errors`);
  for (const e of client.errors.slice(0, 20)) console.log(`  ${e}`);
  failed ||= client.errors.length > 0;
  const current = await generatedClientIsCurrent(document);
  console.log(`client/generated/openapi.ts: ${current ? 'current' : 'stale: run npm run client:generate'}`);
  failed ||= !current;
  process.exit(failed ? 1 : 0);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
