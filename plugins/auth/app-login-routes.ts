import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { paramsOf, payloadOf } from '../../core/http/request.ts';
import { clientAddressOf } from '../../core/http/client-address.ts';
import { docs, emailSchema, orgId, projectId } from '../../core/http/schemas.ts';
import { TYPEID_SUFFIX } from '../../core/ids.ts';
import { tokenResponse } from './schemas.ts';
import { AppLogin } from './magic-links.ts';

const tags = ['api', 'auth'];
const SMALL_PAYLOAD = { maxBytes: 16 * 1024 };

const magicToken = Joi.string()
  .pattern(new RegExp(`^mlk_${TYPEID_SUFFIX}\\.[A-Za-z0-9_-]{43}$`), 'mlk_<id>.<secret>')
  .description('the token of the mailed sign-in link');
const password = Joi.string().min(10).max(200).description('at least 10 characters');

const appBranding = Joi.object({
  app_name: Joi.string().required(),
  primary_color: Joi.string().allow(null).required(),
  support_email: Joi.string().allow(null).required(),
}).label('AppBrandingSettings');

const appConfig = Joi.object({
  project_id: projectId.required(),
  branding: appBranding.required(),
  login_method: Joi.string().valid('magic_link', 'password_or_magic_link').required(),
  self_signup: Joi.boolean().required(),
  invite_requires_password: Joi.boolean().required(),
  magic_link_path: Joi.string().required(),
  verify_path: Joi.string().required(),
  password_login_path: Joi.string().allow(null).required(),
  magic_link_minutes: Joi.number().integer().required(),
}).label('AppAuthConfig');

const linkRequest = Joi.object({
  project_id: projectId.required(),
  email: emailSchema.required(),
  redirect_url: Joi.string()
    .uri({ scheme: ['https', 'http'] })
    .max(2048)
    .description(
      'the app page that finishes sign-in (its origin must be in x-svc.auth.redirect_origins); the mailed link is this URL with the token in the fragment',
    ),
}).label('MagicLinkRequest');

const linkRequested = Joi.object({
  status: Joi.string().valid('requested').required(),
  message: Joi.string().required(),
}).label('MagicLinkRequested');

const verifyRequest = Joi.object({
  token: magicToken.required(),
  email: emailSchema.required(),
  password: password.description('sets the account password (apps with passwords); required for an invited user when x-svc.auth.invite_requires_password'),
}).label('MagicLinkVerifyRequest');

const appTokenResponse = tokenResponse
  .keys({
    orgs_joined: Joi.array().items(orgId).required().description('orgs joined by this sign-in (invites, domain signup)'),
    redirect_url: Joi.string().allow(null).required(),
  })
  .label('AppSignIn');

const passwordLogin = Joi.object({ project_id: projectId.required(), email: emailSchema.required(), password: Joi.string().max(200).required() }).label(
  'PasswordLoginRequest',
);

/** App-side login of apps deployed on svc (x-svc.auth): their settings, sign-in links, passwords. No token needed. */
export function appLoginRoutes(container: DependencyContainer): ServerRoute[] {
  const login = container.resolve(AppLogin);
  return [
    {
      method: 'GET',
      path: '/auth/apps/{project_id}/config',
      options: {
        id: 'getAppAuthConfig',
        auth: false,
        tags,
        description: "An app's sign-in settings and branding (x-svc.auth, x-svc.branding of its project's manifest); 404 when it has no x-svc.auth",
        plugins: docs(400, 404),
        validate: { params: Joi.object({ project_id: projectId.required() }) },
        response: { schema: appConfig },
      },
      handler: (request) => login.settings(paramsOf(request).project_id),
    },
    {
      method: 'POST',
      path: '/auth/magic-link',
      options: {
        id: 'requestMagicLink',
        auth: false,
        tags,
        payload: SMALL_PAYLOAD,
        description:
          'Mail a single-use sign-in link for an app (valid minutes); 202 with the same answer whether or not the address may sign in; 429 with Retry-After over auth.magic_link_limits (per e-mail, per client address)',
        plugins: docs(400, 404, 422, 429),
        validate: { payload: linkRequest },
        response: { status: { 202: linkRequested } },
      },
      handler: async (request, h) => h.response(await login.request(payloadOf(request), clientAddressOf(request))).code(202),
    },
    {
      method: 'POST',
      path: '/auth/magic-link/verify',
      options: {
        id: 'verifyMagicLink',
        auth: false,
        tags,
        payload: SMALL_PAYLOAD,
        description: 'Use a sign-in link: a user token; 401 for a wrong link or another e-mail, 410 once used or expired, 422 when a password is needed',
        plugins: docs(400, 401, 410, 422),
        validate: { payload: verifyRequest },
        response: { schema: appTokenResponse },
      },
      handler: (request) => login.verify(payloadOf(request)),
    },
    {
      method: 'POST',
      path: '/auth/password/login',
      options: {
        id: 'passwordLogin',
        auth: false,
        tags,
        payload: SMALL_PAYLOAD,
        description: 'Sign in to an app whose login_method is password_or_magic_link; 401 for a wrong e-mail or password',
        plugins: docs(400, 401, 404, 422),
        validate: { payload: passwordLogin },
        response: { schema: appTokenResponse },
      },
      handler: (request) => login.passwordLogin(payloadOf(request)),
    },
  ];
}
