import { execFileSync } from 'node:child_process';
import { ascending, fmt, goalRow, kernelWithProject, knob, percentile, printTable, type Row } from './lib.ts';

const RUNS = knob('BENCH_BUILD_RUNS', 5);
const REUSE_GOAL_MS = 100;
const TIMEOUT_MS = 300_000;

/**
 * Time from POST /projects/{id}/builds to the artifacts read back (GET the build until it ended,
 * then its artifacts), for the two-service test repository on the local engine (the buildx
 * builder, registry none): built anew each time (force_rebuild; BuildKit's own layer cache is warm
 * after the first), and answered by build reuse, for which the request alone is also timed (its
 * answer is the completed run, the artifacts recorded in the same transaction).
 * Needs a Docker engine; without one it says so and measures nothing.
 */
export async function runBuildsBench(): Promise<string[]> {
  try {
    execFileSync('/usr/bin/docker', ['version'], { stdio: 'ignore' });
  } catch {
    console.log('\nbuilds: no Docker engine answers /usr/bin/docker; the builds benchmark was not run');
    return [];
  }
  const { ensureBuildBaseImage } = await import('../test/docker/images.ts');
  const { twoServiceRepo } = await import('../test/builds/helpers.ts');
  ensureBuildBaseImage();
  const repo = twoServiceRepo();
  const { srv, api, projectId: first } = await kernelWithProject(['api', 'worker'], undefined, { builds: { poll_ms: 50, log_flush_ms: 50 } });
  const failures: string[] = [];
  const made = new Set<string>();
  try {
    const org = (await api.get(`/projects/${first}`)).body.org_id;
    const project = (await api.post('/projects', { org_id: org, name: 'Builds', slug: 'bldbench', repo_url: repo.url })).body.id;
    const hash = (await api.post(`/projects/${project}/manifest`, { ref: repo.sha })).body.manifest_hash;
    const answered: number[] = [];
    const once = async (force: boolean): Promise<number> => {
      const started = performance.now();
      const created = await api.post(`/projects/${project}/builds`, { git_sha: repo.sha, manifest_hash: hash, force_rebuild: force });
      // A reused build is answered completed by the request itself, its artifacts recorded in the same transaction.
      if (created.body.status === 'completed') answered.push(performance.now() - started);
      for (;;) {
        const build = (await api.get(`/builds/${created.body.id}`)).body;
        if (build.status === 'completed') {
          for (const a of (await api.get(`/builds/${created.body.id}/artifacts`)).body.data) made.add(a.image_ref);
          return performance.now() - started;
        }
        if (build.status !== 'pending' && build.status !== 'building') throw new Error(`build ${build.id} ${build.status}: ${build.latest_run?.error_message}`);
        if (performance.now() - started > TIMEOUT_MS) throw new Error(`build ${build.id} still ${build.status}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const cold: number[] = [];
    const reused: number[] = [];
    for (let i = 0; i < RUNS; i++) cold.push(await once(true));
    for (let i = 0; i < RUNS; i++) reused.push(await once(false));
    const rows: Row[] = [];
    if (answered.length !== RUNS) throw new Error(`${RUNS - answered.length} reused build(s) were not answered completed by their request`);
    for (const [scenario, values] of [
      ['built (force_rebuild)', ascending(cold)],
      ['reused', ascending(reused)],
    ] as const) {
      for (const p of [50, 95]) {
        const v = percentile(values, p);
        rows.push(
          scenario === 'reused'
            ? goalRow(scenario, `p${p} request → artifacts read`, v, fmt.ms, { atMost: REUSE_GOAL_MS })
            : { scenario, figure: `p${p} request → artifacts read`, value: fmt.ms(v), goal: '' },
        );
      }
    }
    for (const p of [50, 95])
      rows.push(goalRow('reused', `p${p} request answered completed`, percentile(ascending(answered), p), fmt.ms, { atMost: REUSE_GOAL_MS }));
    printTable(`Builds: two services, ${RUNS} runs each, local engine (buildx, registry none)`, rows, [
      'the first build also fills BuildKit’s layer cache; later ones reuse its layers',
    ]);
  } catch (err) {
    failures.push(`builds: ${(err as Error).message}`);
  } finally {
    await srv.stop();
    if (made.size) execFileSync('/usr/bin/docker', ['image', 'rm', '--force', ...made], { stdio: 'ignore' });
  }
  return failures;
}
