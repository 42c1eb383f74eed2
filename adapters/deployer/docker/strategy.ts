import type { DeployService, DeployStrategy } from '../../../core/ports/environments.ts';

/** What each strategy does, as the deploy log says it. */
const MEANING: Record<DeployStrategy, string> = {
  replace: 'the old container stops before the new one starts, and starts again if the new one fails',
  'start-first': 'the new container starts beside the old one, which is removed once the new one is healthy',
};

export interface StrategyChoice {
  strategy: DeployStrategy;
  /** Why this one: the manifest's choice, or what made the deployer choose it. */
  reason: string;
}

/** `host:container` as published (`127.0.0.1:18080`, or `18080` on every address). */
const published = (p: DeployService['ports'][number]) => `${p.host_ip ? `${p.host_ip}:` : ''}${p.host}`;

/**
 * How a redeploy swaps one service's container: the manifest's `deploy_strategy`, else `replace`
 * when the old and the new container cannot run at once (a published host port, which only one
 * container can hold; host networking, where both would share the host's ports), else `start-first`.
 */
export function strategyFor(name: string, service: DeployService, network: string | null): StrategyChoice {
  if (service.deploy_strategy) return { strategy: service.deploy_strategy, reason: `services.${name}.deploy_strategy in the manifest` };
  const ports = service.ports.filter((p) => p.host !== null);
  if (ports.length > 0)
    return {
      strategy: 'replace',
      reason: `it publishes host port${ports.length > 1 ? 's' : ''} ${ports.map(published).join(', ')}, which one container holds at a time`,
    };
  if (network === 'host')
    return { strategy: 'replace', reason: "the deployer's network is host, so the old and the new container would share the host's ports" };
  return { strategy: 'start-first', reason: "it publishes no host port and the deployer's network is not host, so both can run at once" };
}

/** The deploy log's line for a choice. */
export const describeStrategy = (name: string, c: StrategyChoice): string => `${name}: deploy strategy ${c.strategy} (${MEANING[c.strategy]}): ${c.reason}`;
