// `npm run test:clis`: the harnesses against the real coding CLIs (test/clis/), kept out of
// `npm test`; test/clis/run.ts installs the CLIs first. Each test runs a real CLI against a
// scripted model server on loopback, through svc.
export default {
  files: ['test/clis/**/*.test.ts'],
  extensions: { ts: 'module' },
  nodeArguments: ['--import=tsx', '--conditions=svc-source'],
  workerThreads: false,
  timeout: '3m',
  concurrency: 2,
};
