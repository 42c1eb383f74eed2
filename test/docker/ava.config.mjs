// ava configuration of `npm run test:docker` (test/docker/run.ts): the tests that need a Docker
// engine. Their names end in .docker.ts, so the main suite's glob (test/**/*.test.ts) never runs them.
export default {
  files: ['test/docker/**/*.docker.ts'],
  extensions: { ts: 'module' },
  nodeArguments: ['--import=tsx'],
  workerThreads: false,
  timeout: '3m',
  concurrency: 2,
};
