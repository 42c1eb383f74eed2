import type { DomainPlugin } from '../../core/http/plugins.ts';
import { lookupLater } from '../../core/di.ts';
import { AttemptCompletionListeners } from '../../core/ports/attempts.ts';
import { PriceBookToken } from '../../core/ports/billing.ts';
import { EnvironmentSuspensionToken } from '../../core/ports/environments.ts';
import { JobAdmissions } from '../../core/ports/jobs.ts';
import { BillingRepository } from './repository.ts';
import { Pricing } from './pricing.ts';
import { EnvironmentSuspensionLookup, OrgAccounts } from './accounts.ts';
import { GatewayUsageLookup, SpendReports } from './spend.ts';
import { GatewayUsageToken } from '../../core/ports/gateway-usage.ts';
import { billingRoutes } from './routes.ts';
import { describeTags } from '../../core/http/openapi.ts';

/** Rate cards, exchange rates, org currencies, budgets, balances and spend (docs/billing.md). */
export const plugin: DomainPlugin = {
  name: 'billing',
  dependencies: ['orgs', 'projects', 'jobs'],
  register(server, { container }) {
    describeTags(server, {
      billing: "An org's currency, budget, balance and spend; credits, usage and pricing (rate cards, exchange rates) for the system administrator.",
    });
    container.registerInstance(EnvironmentSuspensionLookup, lookupLater(container, EnvironmentSuspensionToken));
    container.registerInstance(GatewayUsageLookup, lookupLater(container, GatewayUsageToken));
    for (const cls of [BillingRepository, Pricing, OrgAccounts, SpendReports]) container.registerSingleton(cls as never);
    container.register(PriceBookToken, { useToken: Pricing });
    const accounts = container.resolve(OrgAccounts);
    container.resolve(AttemptCompletionListeners).add(accounts.attemptEnded);
    container.resolve(JobAdmissions).add(accounts.admit);
    server.ext('onPreStart', () => container.resolve(Pricing).seed());
    server.route(billingRoutes(container));
  },
};
