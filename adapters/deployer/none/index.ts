/**
 * Deployer for servers that run no environments themselves (the default): a deploy records the
 * release as current and nothing runs, so health is always `unknown` (never assumed healthy).
 */
import Joi from 'joi';
import { OneOffUnsupported, type Deployer, type DeployOutcome, type DeployTarget } from '../../../core/ports/environments.ts';
import { defineAdapter } from '../../../core/sdk.ts';

const unknown = (target: DeployTarget): DeployOutcome => ({
  health: 'unknown',
  services: Object.keys(target.services).map((service) => ({ service, health: 'unknown', detail: 'adapters.deployer is none: nothing runs it' })),
});

export default defineAdapter<Deployer>({
  kind: 'deployer',
  name: 'none',
  options: Joi.object({}),
  create: () => ({
    name: 'none',
    deploy: async (target) => unknown(target),
    health: async (target) => unknown(target),
    suspend: async () => undefined,
    resume: async (target) => unknown(target),
    remove: async () => undefined,
    runOnce: async () => {
      throw new OneOffUnsupported('none');
    },
  }),
});
