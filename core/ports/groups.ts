import type { InjectionToken } from 'tsyringe';

/** Membership of the access domain's groups, for other domains (environment reviewers). Registered by the access plugin. */
export interface GroupMembership {
  /** Whether the user is a member of the org's group named `group` (its name or `grp_` id); false for an unknown group. */
  hasUser(orgId: string, group: string, userId: string): Promise<boolean>;
}

export const GroupMembershipToken = Symbol('GroupMembership') as InjectionToken<GroupMembership>;
