import type { InjectionToken } from 'tsyringe';
import type { Db } from '../db/knex.ts';

/**
 * The environments domain's seam for automatic suspension (an org's balance fell below its
 * threshold). Until environments exist nothing is registered and the billing domain only emits its event.
 */
export interface EnvironmentSuspension {
  /** Suspends the org's active environments; how many it suspended. */
  suspendOrg(orgId: string, reason: string, trx: Db): Promise<number>;
}

export const EnvironmentSuspensionToken = Symbol('EnvironmentSuspension') as InjectionToken<EnvironmentSuspension>;

export type EnvironmentHealth = 'healthy' | 'degraded' | 'unknown';

export interface EnvironmentStatus {
  name: string;
  project_id: string;
  status: EnvironmentHealth;
}

/** The environments of a set of projects with their health (the environments domain fills it; none answers an empty list). */
export interface EnvironmentDirectory {
  ofProjects(projectIds: string[]): Promise<EnvironmentStatus[]>;
}

export const EnvironmentDirectoryToken = Symbol('EnvironmentDirectory') as InjectionToken<EnvironmentDirectory>;
