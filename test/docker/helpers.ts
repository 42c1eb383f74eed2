import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { engineAddress } from '../../adapters/docker/engine.ts';

/** The images test/docker/run.ts made sure of: the worker image, and the one with the real CLIs. */
export const IMAGE = process.env.SVC_DOCKER_TEST_IMAGE ?? 'svc-worker:local';
export const CLIS_IMAGE = process.env.SVC_DOCKER_TEST_CLIS_IMAGE ?? 'svc-worker-clis:local';
/** The fake harness CLIs, bind-mounted read-only at the same path. */
export const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

export const docker = new Docker(engineAddress(null, null).options);

/** Containers (running or not) carrying a label, e.g. `svc.workspace=/path`. */
export async function containersLabelled(label: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [label] } });
}

/** What the engine reports having done to containers carrying a label since `since` (create, start, die, destroy, …). */
export async function containerActions(label: string, since: Date): Promise<string[]> {
  const stream = await docker.getEvents({
    since: Math.floor(since.getTime() / 1000),
    until: Math.ceil(Date.now() / 1000) + 1,
    filters: { type: ['container'], label: [label] },
  });
  let text = '';
  for await (const chunk of stream as AsyncIterable<Buffer>) text += chunk.toString('utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { Action: string }).Action);
}
