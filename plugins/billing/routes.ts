import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { principalOf, requires, systemAdmin } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { listQuerySchema, pageSchema, type ListQuery } from '../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../core/http/request.ts';
import { windowQuery, type ReportWindow } from '../../core/http/windows.ts';
import { Pricing, type NewExchangeRate, type NewRateCard } from './pricing.ts';
import { OrgAccounts } from './accounts.ts';
import { SpendReports } from './spend.ts';
import type { OrgBillingChanges } from './repository.ts';
import * as S from './schemas.ts';

const tags = ['api', 'billing'];

/** Rate cards and exchange rates (system administrator), org billing settings, spend and usage (docs/billing.md). */
export function billingRoutes(container: DependencyContainer): ServerRoute[] {
  const pricing = container.resolve(Pricing);
  const accounts = container.resolve(OrgAccounts);
  const reports = container.resolve(SpendReports);
  const orgOf = (request: Parameters<typeof paramsOf>[0]) => paramsOf(request).org_id;

  return [
    {
      method: 'GET',
      path: '/admin/pricing/rate-cards',
      options: {
        id: 'listRateCards',
        tags,
        description: 'Rate cards, newest first',
        plugins: { ...systemAdmin, ...docs(400, 401, 403) },
        validate: { query: listQuerySchema },
        response: { schema: pageSchema(S.cardSchema, 'RateCardList') },
      },
      handler: (request) => pricing.cards(queryOf<ListQuery>(request)),
    },
    {
      method: 'POST',
      path: '/admin/pricing/rate-cards',
      options: {
        id: 'createRateCard',
        tags,
        description: 'A new rate card; it prices attempts that start at or after effective_at (cards are never edited)',
        plugins: { ...systemAdmin, ...docs(400, 401, 403, 409) },
        validate: { payload: S.createCard },
        response: { status: { 201: S.cardSchema } },
      },
      handler: async (request, h) => h.response(await pricing.createCard(payloadOf<NewRateCard>(request), principalOf(request).id)).code(201),
    },
    {
      method: 'GET',
      path: '/admin/pricing/rate-cards/current',
      options: {
        id: 'getCurrentRateCard',
        tags,
        description: 'The rate card in force now (or at `at`)',
        plugins: { ...systemAdmin, ...docs(400, 401, 403, 404) },
        validate: { query: S.currentCardQuery },
        response: { schema: S.cardSchema },
      },
      handler: (request) => pricing.cardInForce(queryOf<{ at?: Date }>(request).at ?? new Date()),
    },
    {
      method: 'GET',
      path: '/admin/pricing/rate-cards/{card_id}',
      options: {
        id: 'getRateCard',
        tags,
        description: 'One rate card',
        plugins: { ...systemAdmin, ...docs(400, 401, 403, 404) },
        validate: { params: S.cardParams },
        response: { schema: S.cardSchema },
      },
      handler: (request) => pricing.card(paramsOf(request).card_id),
    },
    {
      method: 'GET',
      path: '/admin/pricing/exchange-rates',
      options: {
        id: 'listExchangeRates',
        tags,
        description: 'Exchange rates to USD, newest first; `currency` filters',
        plugins: { ...systemAdmin, ...docs(400, 401, 403) },
        validate: { query: S.rateQuery },
        response: { schema: pageSchema(S.rateSchema, 'ExchangeRateList') },
      },
      handler: (request) => pricing.rates(queryOf<ListQuery & { currency?: string }>(request)),
    },
    {
      method: 'POST',
      path: '/admin/pricing/exchange-rates',
      options: {
        id: 'createExchangeRate',
        tags,
        description: 'A rate for a currency from effective_at on: how many USD one unit is worth',
        plugins: { ...systemAdmin, ...docs(400, 401, 403, 409) },
        validate: { payload: S.createRate },
        response: { status: { 201: S.rateSchema } },
      },
      handler: async (request, h) => h.response(await pricing.createRate(payloadOf<NewExchangeRate>(request), principalOf(request).id)).code(201),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/billing',
      options: {
        id: 'getOrgBilling',
        tags,
        description: "The org's billing currency, monthly budget and balance",
        plugins: { ...requires('orgs:read', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams },
        response: { schema: S.billingSchema },
      },
      handler: async (request) => S.toBilling({ ...(await accounts.settings(orgOf(request))) }),
    },
    {
      method: 'PATCH',
      path: '/orgs/{org_id}/billing',
      options: {
        id: 'updateOrgBilling',
        tags,
        description: "Change the org's billing currency, monthly budget or budget mode (org admins)",
        plugins: { ...requires('orgs:write', 'org'), ...docs(400, 401, 403, 404, 422) },
        validate: { params: S.orgParams, payload: S.orgBillingChanges },
        response: { schema: S.billingSchema },
      },
      handler: async (request) => S.toBilling({ ...(await accounts.change(orgOf(request), payloadOf<OrgBillingChanges>(request))) }),
    },
    {
      method: 'PATCH',
      path: '/admin/orgs/{org_id}/billing',
      options: {
        id: 'adminUpdateOrgBilling',
        tags,
        description: "Change any of an org's billing settings, its balance threshold included (system administrator)",
        plugins: { ...systemAdmin, ...docs(400, 401, 403, 404, 422) },
        validate: { params: S.orgParams, payload: S.adminBillingChanges },
        response: { schema: S.billingSchema },
      },
      handler: async (request) => S.toBilling({ ...(await accounts.change(orgOf(request), payloadOf<OrgBillingChanges>(request))) }),
    },
    {
      method: 'POST',
      path: '/admin/orgs/{org_id}/credits',
      options: {
        id: 'addOrgCredit',
        tags,
        description: "Add to the org's balance (system administrator); the first credit starts keeping a balance",
        plugins: { ...systemAdmin, ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, payload: S.credit },
        response: { schema: S.billingSchema },
      },
      handler: async (request) => S.toBilling({ ...(await accounts.credit(orgOf(request), payloadOf<{ amount: number }>(request).amount)) }),
    },
    {
      method: 'GET',
      path: '/orgs/{org_id}/spend',
      options: {
        id: 'getOrgSpend',
        tags,
        description: 'What the org spent in the window: totals and by project, model, harness and day (from receipts)',
        plugins: { ...requires('orgs:read', 'org'), ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: windowQuery },
        response: { schema: S.spendSchema },
      },
      handler: (request) => reports.spend(orgOf(request), queryOf<{ window: ReportWindow }>(request).window),
    },
    {
      method: 'GET',
      path: '/admin/orgs/{org_id}/usage',
      options: {
        id: 'getOrgUsage',
        tags,
        description: "An org's usage records and billing totals in the window (system administrator)",
        plugins: { ...systemAdmin, ...docs(400, 401, 403, 404) },
        validate: { params: S.orgParams, query: S.usageQuery },
        response: { schema: S.usageSchema },
      },
      handler: async (request) => {
        const q = queryOf<{ window: ReportWindow; limit: number }>(request);
        const report = await reports.usage(orgOf(request), q.window, q.limit);
        return { ...report, billing: S.toBilling({ ...report.billing }) };
      },
    },
  ];
}
