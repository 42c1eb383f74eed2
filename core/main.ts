import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from './config/load.ts';
import { AdapterError } from './adapters.ts';
import { startKernel, type Kernel } from './kernel.ts';
import { isDatabaseUnavailable } from './db/unavailable.ts';
import { openApiDocument } from './openapi-document.ts';

const USAGE = `usage: svc serve [--roles api,orchestrator,worker] [--port N] [--config FILE]
       svc openapi   (prints the OpenAPI document, without a database)

Examples:
  svc serve                                   every role, embedded database, on 127.0.0.1:4701
  svc serve --roles worker --port 4702        a worker process beside an api and orchestrator`;

/** `svc serve`: start the roles named (default all) and stop them cleanly on SIGTERM or SIGINT. */
export async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { roles: { type: 'string' }, port: { type: 'string' }, config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const env = { ...process.env };
  if (values.config) env.SVC_CONFIG = values.config;
  if (values.roles) env.SVC_ROLES = values.roles;
  if (values.port) env.PORT = values.port;

  // Signals are ours from the start: one that arrives while booting stops the kernel once it is up,
  // so a half-started embedded database is never left behind.
  let kernel: Kernel | null = null;
  let stopRequest: { reason: string; code: number } | null = null;
  const stop = (reason: string, code: number) => {
    if (stopRequest) return;
    stopRequest = { reason, code };
    if (kernel) void stopKernel(kernel, stopRequest);
  };
  process.on('SIGTERM', () => stop('SIGTERM', 0));
  process.on('SIGINT', () => stop('SIGINT', 0));

  try {
    kernel = await startKernel(loadConfig({ env }));
  } catch (e) {
    if (e instanceof ConfigError || e instanceof AdapterError) {
      console.error(`svc: ${e.message}`);
      process.exit(78);
    }
    throw e;
  }
  const started = kernel;
  // A crash still stops the embedded database rather than leaving it running without its owner.
  // A lost database connection is not a crash: every user of the database reconnects by itself.
  const crash = (err: unknown) => {
    if (isDatabaseUnavailable(err)) return started.logger.error({ err }, 'database connection error outside any request; carrying on');
    started.logger.fatal({ err }, 'unexpected error');
    stop('crash', 1);
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  if (stopRequest) await stopKernel(kernel, stopRequest);
}

async function stopKernel(kernel: Kernel, request: { reason: string; code: number }): Promise<never> {
  kernel.logger.info({ reason: request.reason }, 'shutting down');
  try {
    await kernel.stop();
  } catch (e) {
    console.error(e);
    process.exit(1);
  }
  process.exit(request.code);
}

const [command, ...rest] = process.argv.slice(2);
if (import.meta.url === `file://${process.argv[1]}`) {
  if (command === 'serve' || command === undefined) {
    serve(rest).catch((e) => {
      console.error(`svc: ${e instanceof Error ? e.message : e}`);
      process.exit(1);
    });
  } else if (command === 'openapi' && rest.length === 0) {
    openApiDocument(loadConfig({ env: process.env }))
      .then((doc) => process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`))
      .catch((e) => {
        console.error(`svc: ${e instanceof Error ? e.message : e}`);
        process.exit(1);
      });
  } else {
    console.error(USAGE);
    process.exit(64);
  }
}
