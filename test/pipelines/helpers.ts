import type { ExecutionContext } from 'ava';
import { claimWorld, claimed, complete, type World } from '../jobs/claim-helpers.ts';

/** A linear pipeline, a diamond with an approval, and environments that feed inputs. */
export const PIPELINES = `
pipelines:
  ship:
    steps:
      - { name: build, action: { type: build, with: { services: [api] } } }
      - { name: test, script: { run: npm test, timeout: 120 }, depends_on: [build] }
      - { name: review, agent: { prompt: "Review the release" }, depends_on: [test] }
  diamond:
    steps:
      - { name: a, run: echo a }
      - { name: left, run: echo left, depends_on: [a] }
      - { name: right, run: echo right, depends_on: [a] }
      - { name: gate, run: echo gate, approval: true, depends_on: [left, right] }
      - { name: after, run: echo after, depends_on: [gate] }
  approve-first:
    steps:
      - { name: hold, run: echo hold, approval: true }
      - { name: go, run: echo go, depends_on: [hold] }
environments:
  staging:
    pipeline: ship
    pipeline_inputs: { tier: small, region: eu }
  other:
    pipeline: diamond
    pipeline_inputs: { ignored: true }
`;

/** The claim world with PIPELINES synced into project A. */
export async function pipelineWorld(name: string, yaml = PIPELINES): Promise<World> {
  const w = await claimWorld(name);
  const res = await w.owner.api.post(`/projects/${w.projectA}/manifest`, { yaml });
  if (res.statusCode !== 200) throw new Error(`manifest: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return w;
}

export async function startRun(w: World, pipeline: string, body: Record<string, unknown> = {}, project = w.projectA): Promise<any> {
  const res = await w.owner.api.post(`/projects/${project}/pipelines/${pipeline}/run`, body);
  if (res.statusCode !== 201) throw new Error(`run: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}

export const getRun = async (w: World, runId: string, project = w.projectA): Promise<any> => (await w.owner.api.get(`/projects/${project}/runs/${runId}`)).body;

export const stepOf = (run: any, name: string): any => run.steps.find((s: any) => s.name === name);
export const statuses = (run: any): Record<string, string> => Object.fromEntries(run.steps.map((s: any) => [s.name, s.status]));

/** Claims a step's job and ends its attempt with `status` (success or failed). */
export async function finishStep(t: ExecutionContext, w: World, run: any, step: string, status: 'success' | 'failed' = 'success'): Promise<void> {
  const jobId = stepOf(run, step).job_id;
  const { attempt } = await claimed(t, w, jobId);
  const res = await complete(
    w,
    jobId,
    attempt,
    { status, ...(status === 'failed' ? { reason: `${step} broke` } : { summary: `${step} ok` }) },
    status === 'failed' ? { error: `${step} broke` } : {},
  );
  t.is(res.statusCode, 200, JSON.stringify(res.body));
}
