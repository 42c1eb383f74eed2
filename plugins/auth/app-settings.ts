import Boom from '@hapi/boom';
import { inject, injectable, lookupLater, type DependencyContainer } from '../../core/di.ts';
import { ManifestReaderToken, type ManifestReader } from '../../core/ports/manifest.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import type { RoleName } from '../../core/auth/permissions.ts';
import type { AuthConfig, BrandingConfig } from '../../domain/manifest/types.ts';

/** Reads the manifest lazily: the manifest plugin may load after auth. */
export class AppManifests {
  constructor(readonly current: () => ManifestReader | null) {}
  static of(container: DependencyContainer): AppManifests {
    return new AppManifests(lookupLater(container, ManifestReaderToken));
  }
}

/** An app's sign-in rules: `x-svc.auth` of its project's current manifest, with the defaults filled in. */
export interface AppSettings {
  projectId: string;
  branding: { app_name: string; primary_color: string | null; support_email: string | null };
  loginMethod: 'magic_link' | 'password_or_magic_link';
  selfSignup: boolean;
  inviteRequiresPassword: boolean;
  invite: { enabled: boolean; allowedOrgs: string[]; invitedRole: RoleName };
  domainSignup: { enabled: boolean; domains: { domain: string; target_org: string; role: RoleName }[] };
  redirectOrigins: string[];
}

export function appSettings(projectId: string, projectName: string, auth: AuthConfig, branding: BrandingConfig = {}): AppSettings {
  const invite = auth.org_access?.invite ?? {};
  const signup = auth.org_access?.domain_signup ?? {};
  return {
    projectId,
    branding: { app_name: branding.app_name ?? projectName, primary_color: branding.primary_color ?? null, support_email: branding.support_email ?? null },
    loginMethod: auth.login_method ?? 'magic_link',
    selfSignup: auth.self_signup ?? false,
    inviteRequiresPassword: auth.invite_requires_password ?? false,
    invite: { enabled: invite.enabled ?? false, allowedOrgs: invite.allowed_orgs ?? [], invitedRole: invite.invited_role ?? 'member' },
    domainSignup: {
      enabled: signup.enabled ?? false,
      domains: (signup.domains ?? []).map((d) => ({ domain: d.domain.toLowerCase(), target_org: d.target_org, role: d.role ?? 'member' })),
    },
    redirectOrigins: auth.redirect_origins ?? [],
  };
}

/** Whether a URL may receive a user back: its origin is one the app lists in `x-svc.auth.redirect_origins`. */
export function checkRedirect(settings: AppSettings, url: string | undefined, field = 'redirect_url'): void {
  if (url === undefined) return;
  if (!settings.redirectOrigins.includes(new URL(url).origin)) {
    throw Boom.badData(`"${field}" must be on an origin the app lists in x-svc.auth.redirect_origins`);
  }
}

/**
 * The app behind a project: its current synced manifest's `x-svc.auth` and `x-svc.branding`. 404
 * for an unknown or deleted project, and for one whose manifest has no `x-svc.auth` (not an app
 * with sign-in).
 */
@injectable()
export class AppSettingsReader {
  constructor(
    @inject(AppManifests) private readonly manifests: AppManifests,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  async of(projectId: string): Promise<AppSettings> {
    const project = await this.projects.byId(projectId);
    const manifest = project && !project.deleted ? await this.manifests.current()?.current(projectId) : null;
    const xsvc = manifest?.parsed['x-svc'];
    if (!project || !xsvc?.auth) throw Boom.notFound(`app ${projectId} not found (a project whose manifest has x-svc.auth)`);
    return appSettings(projectId, project.name, xsvc.auth, xsvc.branding);
  }
}
