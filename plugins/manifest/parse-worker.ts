/**
 * The worker thread behind OffLoopParser (off-loop.ts): parses, validates and normalizes manifests
 * handed to it, one message at a time, so the server's event loop never runs a large or suspicious
 * parse itself. It says `ready` once its imports are loaded: the time limit counts from the job.
 */
import { parentPort } from 'node:worker_threads';
import { loadManifest, manifestTextProblem, parseYaml } from '../../domain/manifest/parse.ts';

export interface ParseJob {
  id: number;
  kind: 'load' | 'parse';
  text: string;
  maxDepth: number;
}

const port = parentPort;
if (port) {
  port.on('message', (job: ParseJob) => {
    try {
      const refused = job.kind === 'load' ? manifestTextProblem(job.text, job.maxDepth) : null;
      if (refused !== null) {
        port.postMessage({ id: job.id, refused });
        return;
      }
      const result = job.kind === 'load' ? loadManifest(job.text, job.maxDepth) : parseYaml(job.text, job.maxDepth);
      port.postMessage({ id: job.id, json: JSON.stringify(result) }); // JSON text: cheaper for the loop to take than a cloned object graph
    } catch (err) {
      port.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) });
    }
  });
  port.postMessage({ ready: true });
}
