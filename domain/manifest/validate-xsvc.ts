import { type Problems, at, expectObject, index, isObject, isString, unknownKeys } from './problems.ts';
import { checkEnvOverrides } from './validate-env.ts';
import { findCycles } from './validate-steps.ts';

const SECTIONS = ['defaults', 'agents', 'api_spec', 'branding', 'auth'] as const;

/**
 * CreateJobRequest fields a manifest may default (not description or parent_id, which belong to
 * one job). The jobs domain checks the values in full against its request schema when it merges
 * them; this is the shape check at sync.
 */
export const DEFAULTABLE_JOB_FIELDS = [
  'title',
  'issue_type',
  'labels',
  'phase',
  'priority',
  'assignee',
  'review_required',
  'defer_until',
  'due_at',
  'harness',
  'harness_profile',
  'harness_variant',
  'harness_options',
  'model',
  'reasoning_effort',
  'harness_profile_override',
  'env_overrides',
  'hints',
  'git',
  'workspace',
  'resource_refs',
  'env_name',
  'execution_mode',
] as const;
const OBJECT_FIELDS = ['harness_options', 'harness_profile_override', 'hints', 'git', 'workspace'];
const STRING_FIELDS = [
  'title',
  'issue_type',
  'phase',
  'review_required',
  'harness',
  'harness_profile',
  'harness_variant',
  'model',
  'reasoning_effort',
  'execution_mode',
];
const REASONING = ['low', 'medium', 'high', 'x-high'];

const AGENT_KEYS = ['version', 'profiles', 'availability'];
const ENTRY_KEYS = ['harness', 'model', 'reasoning_effort', 'profile'];
const BRANDING_KEYS = ['app_name', 'primary_color', 'support_email'];
const AUTH_KEYS = ['login_method', 'self_signup', 'invite_requires_password', 'org_access', 'redirect_origins'];
const ROLES = ['owner', 'admin', 'member'];

function checkDefaults(problems: Problems, value: unknown, path: string, profiles: Set<string>): void {
  if (!expectObject(problems, value, path)) return;
  unknownKeys(problems, value, DEFAULTABLE_JOB_FIELDS, path);
  for (const key of OBJECT_FIELDS) if (value[key] !== undefined) expectObject(problems, value[key], at(path, key));
  for (const key of STRING_FIELDS) if (value[key] !== undefined && !isString(value[key])) problems.add(at(path, key), `${key} must be a string`);
  const p = value.priority;
  if (p !== undefined && !(Number.isInteger(p) && (p as number) >= 0 && (p as number) <= 4))
    problems.add(at(path, 'priority'), 'priority must be an integer from 0 to 4');
  if (value.labels !== undefined && !(Array.isArray(value.labels) && value.labels.every(isString)))
    problems.add(at(path, 'labels'), 'labels must be a list of strings');
  if (value.resource_refs !== undefined && !Array.isArray(value.resource_refs)) problems.add(at(path, 'resource_refs'), 'resource_refs must be a list');
  if (isString(value.harness_profile) && !profiles.has(value.harness_profile)) {
    problems.add(at(path, 'harness_profile'), `Unknown harness profile '${value.harness_profile}'; define it under x-svc.agents.profiles`);
  }
  checkEnvOverrides(problems, value.env_overrides, at(path, 'env_overrides'));
}

function checkAgents(problems: Problems, value: unknown, path: string): void {
  if (!expectObject(problems, value, path)) return;
  unknownKeys(problems, value, AGENT_KEYS, path);
  if (value.version !== 1) problems.add(at(path, 'version'), `${path}.version must be 1`);
  if (value.availability !== undefined && expectObject(problems, value.availability, at(path, 'availability'))) {
    unknownKeys(problems, value.availability, ['drop_unavailable'], at(path, 'availability'));
    const drop = value.availability.drop_unavailable;
    if (drop !== undefined && typeof drop !== 'boolean') problems.add(at(path, 'availability.drop_unavailable'), 'drop_unavailable must be true or false');
  }
  if (value.profiles === undefined || !expectObject(problems, value.profiles, at(path, 'profiles'))) return;
  const profiles = value.profiles;
  const edges = new Map<string, string[]>();
  for (const [name, entries] of Object.entries(profiles)) {
    const where = at(at(path, 'profiles'), name);
    if (!Array.isArray(entries)) {
      problems.add(where, `profile '${name}' must be an ordered list of entries`);
      continue;
    }
    edges.set(name, []);
    entries.forEach((entry, i) => {
      const e = index(where, i);
      if (!expectObject(problems, entry, e)) return;
      unknownKeys(problems, entry, ENTRY_KEYS, e);
      if (isString(entry.profile)) {
        if (entry.harness !== undefined) problems.add(e, 'a profile entry has either harness or profile, not both');
        if (!Object.hasOwn(profiles, entry.profile)) problems.add(at(e, 'profile'), `Unknown harness profile '${entry.profile}' in profile '${name}'`);
        else edges.get(name)!.push(entry.profile);
      } else if (!isString(entry.harness)) {
        problems.add(e, 'a profile entry needs harness or profile');
      }
      if (entry.reasoning_effort !== undefined && !REASONING.includes(entry.reasoning_effort as string)) {
        problems.add(at(e, 'reasoning_effort'), `reasoning_effort must be one of ${REASONING.join(', ')}`);
      }
    });
  }
  for (const cycle of findCycles(edges)) {
    problems.add(at(at(path, 'profiles'), cycle[0]), `Profile cycle detected in x-svc.agents: ${[...cycle, cycle[0]].join(' -> ')}`);
  }
}

function checkAuth(problems: Problems, value: unknown, path: string): void {
  if (!expectObject(problems, value, path)) return;
  unknownKeys(problems, value, AUTH_KEYS, path);
  const method = value.login_method;
  if (method !== undefined && method !== 'magic_link' && method !== 'password_or_magic_link') {
    problems.add(at(path, 'login_method'), "login_method must be 'magic_link' or 'password_or_magic_link'");
  }
  for (const key of ['self_signup', 'invite_requires_password']) {
    if (value[key] !== undefined && typeof value[key] !== 'boolean') problems.add(at(path, key), `${key} must be true or false`);
  }
  if (value.org_access !== undefined && expectObject(problems, value.org_access, at(path, 'org_access'))) {
    unknownKeys(problems, value.org_access, ['invite', 'domain_signup'], at(path, 'org_access'));
    checkOrgAccess(problems, value.org_access, at(path, 'org_access'));
  }
  const origins = value.redirect_origins;
  if (origins !== undefined && !(Array.isArray(origins) && origins.every((o) => isString(o) && /^https?:\/\/[^/?#\s]+$/.test(o)))) {
    problems.add(at(path, 'redirect_origins'), 'redirect_origins must be a list of origins like https://app.example.com');
  }
}

function checkRole(problems: Problems, value: unknown, path: string): void {
  if (value !== undefined && !ROLES.includes(value as string)) problems.add(path, `role must be one of ${ROLES.join(', ')}`);
}

function checkEnabled(problems: Problems, value: Record<string, unknown>, path: string): void {
  if (value.enabled !== undefined && typeof value.enabled !== 'boolean') problems.add(at(path, 'enabled'), 'enabled must be true or false');
}

/** `org_access.invite` (`enabled`, `allowed_orgs`, `invited_role`) and `org_access.domain_signup` (`enabled`, `domains`). */
function checkOrgAccess(problems: Problems, access: Record<string, unknown>, path: string): void {
  const invite = at(path, 'invite');
  if (access.invite !== undefined && expectObject(problems, access.invite, invite)) {
    unknownKeys(problems, access.invite, ['enabled', 'allowed_orgs', 'invited_role'], invite);
    checkEnabled(problems, access.invite, invite);
    const orgs = access.invite.allowed_orgs;
    if (orgs !== undefined && !(Array.isArray(orgs) && orgs.every(isString)))
      problems.add(at(invite, 'allowed_orgs'), 'allowed_orgs must be a list of org ids or slugs');
    checkRole(problems, access.invite.invited_role, at(invite, 'invited_role'));
  }
  const signup = at(path, 'domain_signup');
  if (access.domain_signup === undefined || !expectObject(problems, access.domain_signup, signup)) return;
  unknownKeys(problems, access.domain_signup, ['enabled', 'domains'], signup);
  checkEnabled(problems, access.domain_signup, signup);
  const domains = access.domain_signup.domains;
  if (domains === undefined) return;
  if (!Array.isArray(domains)) return problems.add(at(signup, 'domains'), 'domains must be a list');
  domains.forEach((entry, i) => {
    const where = index(at(signup, 'domains'), i);
    if (!expectObject(problems, entry, where)) return;
    unknownKeys(problems, entry, ['domain', 'target_org', 'role'], where);
    if (!isString(entry.domain) || !/^[a-z0-9.-]+\.[a-z]{2,}$/i.test(entry.domain))
      problems.add(at(where, 'domain'), 'domain must be a domain name like example.com');
    if (!isString(entry.target_org)) problems.add(at(where, 'target_org'), 'target_org must name an org (id or slug)');
    checkRole(problems, entry.role, at(where, 'role'));
  });
}

/** The profile names x-svc.agents defines (for references elsewhere). */
export function profileNames(xsvc: unknown): Set<string> {
  const profiles = isObject(xsvc) && isObject(xsvc.agents) && isObject(xsvc.agents.profiles) ? xsvc.agents.profiles : {};
  return new Set(Object.keys(profiles));
}

/** The API names x-svc.api_spec declares, or null when the section is absent. */
export function apiNames(xsvc: unknown): Set<string> | null {
  return isObject(xsvc) && isObject(xsvc.api_spec) ? new Set(Object.keys(xsvc.api_spec)) : null;
}

export function checkSvcExtension(problems: Problems, value: unknown): void {
  const path = 'x-svc';
  if (value === undefined || !expectObject(problems, value, path)) return;
  unknownKeys(problems, value, SECTIONS, path);
  if (value.defaults !== undefined) checkDefaults(problems, value.defaults, at(path, 'defaults'), profileNames(value));
  if (value.agents !== undefined) checkAgents(problems, value.agents, at(path, 'agents'));
  if (value.api_spec !== undefined) expectObject(problems, value.api_spec, at(path, 'api_spec'));
  if (value.branding !== undefined && expectObject(problems, value.branding, at(path, 'branding'))) {
    unknownKeys(problems, value.branding, BRANDING_KEYS, at(path, 'branding'));
  }
  if (value.auth !== undefined) checkAuth(problems, value.auth, at(path, 'auth'));
}
