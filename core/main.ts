import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from './config/load.ts';
import { AdapterError } from './adapters.ts';
import { startKernel } from './kernel.ts';

const USAGE = `usage: svc serve [--roles api,orchestrator,worker] [--port N] [--config FILE]`;

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

  let kernel;
  try {
    kernel = await startKernel(loadConfig({ env }));
  } catch (e) {
    if (e instanceof ConfigError || e instanceof AdapterError) {
      console.error(`svc: ${e.message}`);
      process.exit(78);
    }
    throw e;
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    kernel.logger.info({ signal }, 'shutting down');
    kernel.stop().then(
      () => process.exit(0),
      (e) => {
        console.error(e);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

const [command, ...rest] = process.argv.slice(2);
if (import.meta.url === `file://${process.argv[1]}`) {
  if (command === 'serve' || command === undefined) {
    serve(rest).catch((e) => {
      console.error(`svc: ${e instanceof Error ? e.message : e}`);
      process.exit(1);
    });
  } else {
    console.error(USAGE);
    process.exit(64);
  }
}
