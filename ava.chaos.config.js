// `npm run test:chaos`: the fault tests (test/chaos/), kept out of `npm test`. Each file starts its own
// PostgreSQL cluster and real server processes; one file at a time, so the timings they measure
// (recovery seconds, lock waits) are not another file's load. About 5 minutes in all.
export default {
  files: ['test/chaos/**/*.test.ts'],
  extensions: { ts: 'module' },
  nodeArguments: ['--import=tsx', '--conditions=svc-source'],
  workerThreads: false,
  timeout: '5m',
  concurrency: 1,
};
