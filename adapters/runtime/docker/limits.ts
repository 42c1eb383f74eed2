import Joi from 'joi';

export interface ResourceClass {
  cpus: number;
  memory: string | number;
  pids?: number;
}

export const DEFAULT_RESOURCE_CLASSES: Record<string, ResourceClass> = {
  'job.c1': { cpus: 1, memory: '2g', pids: 4096 },
  'job.c2': { cpus: 2, memory: '4g', pids: 8192 },
};

const MEMORY = /^(\d+(?:\.\d+)?)\s*([kmg]?)i?b?$/i;

export const resourceClassSchema = Joi.object({
  cpus: Joi.number().positive().max(1024).required().description('CPUs the container may use (NanoCpus), e.g. 0.5, 2'),
  memory: Joi.alternatives(
    Joi.number()
      .integer()
      .min(6 * 1024 * 1024),
    Joi.string().pattern(MEMORY, 'a size such as 512m or 2g'),
  )
    .required()
    .description('Memory limit (no swap beyond it): bytes, or a number with k, m or g'),
  pids: Joi.number().integer().min(16).description('Most processes (and threads) the container may have'),
});

export function memoryBytes(memory: string | number): number {
  if (typeof memory === 'number') return memory;
  const [, amount, unit] = MEMORY.exec(memory.trim())!;
  const scale = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[unit.toLowerCase() as '' | 'k' | 'm' | 'g'];
  return Math.round(Number(amount) * scale);
}

/** The HostConfig limits of a resource class. */
export function hostLimits(rc: ResourceClass): { NanoCpus: number; Memory: number; MemorySwap: number; PidsLimit?: number } {
  const memory = memoryBytes(rc.memory);
  return { NanoCpus: Math.round(rc.cpus * 1e9), Memory: memory, MemorySwap: memory, ...(rc.pids ? { PidsLimit: rc.pids } : {}) };
}
