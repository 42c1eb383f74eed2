import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' },
  }).trim();

/** A real git repository in a temp dir; commit(manifest) writes .svc/manifest.yaml and returns the SHA. */
export function tempRepo(branch = 'main') {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-manifest-repo-'));
  git(dir, 'init', '--quiet', '-b', branch);
  return {
    dir,
    url: `file://${dir}`,
    commit(manifest: string | null, message = 'change'): string {
      if (manifest !== null) {
        mkdirSync(path.join(dir, '.svc'), { recursive: true });
        writeFileSync(path.join(dir, '.svc', 'manifest.yaml'), manifest);
      } else {
        writeFileSync(path.join(dir, 'README.md'), message);
      }
      git(dir, 'add', '-A');
      git(dir, 'commit', '--quiet', '-m', message);
      return git(dir, 'rev-parse', 'HEAD');
    },
    tag: (name: string) => git(dir, 'tag', name),
  };
}

export const SIMPLE = `
workflows:
  review:
    db_access: read_only
    steps:
      - name: lint
        run: npm run lint
      - name: check
        agent: { name: reviewer }
        depends_on: [lint]
  nightly:
    steps:
      - { name: only, script: { run: make nightly } }
pipelines:
  release:
    steps:
      - { name: build, action: { type: build } }
      - { name: deploy, action: { type: deploy, with: { env_name: prod } }, depends_on: [build] }
x-svc:
  defaults:
    priority: 1
    labels: [from-manifest]
    hints: { worker_type: node-worker, timeout_seconds: 900 }
`;
