import type { DockerConfigJson, RegistryContext, RegistryMode } from '../../../core/ports/registry.ts';
import { REGISTRY_PASSWORD as DEFAULT_PASSWORD_SECRET, REGISTRY_USERNAME as DEFAULT_USERNAME_SECRET } from '../../../core/secrets/platform.ts';

function settingOf(ctx: RegistryContext) {
  if (typeof ctx.setting !== 'object') throw new Error(`registry setting '${String(ctx.setting)}' is not an own registry`);
  return ctx.setting;
}

async function credentials(ctx: RegistryContext) {
  const auth = settingOf(ctx).auth ?? {};
  return {
    username: await ctx.secret(auth.username_secret ?? DEFAULT_USERNAME_SECRET),
    password: await ctx.secret(auth.token_secret ?? DEFAULT_PASSWORD_SECRET),
  };
}

/**
 * An own registry (`registry: {host, namespace, auth}`): images go to `host/namespace/service`
 * (namespace defaults to the project slug), logged in with the secrets the setting names.
 */
const mode: RegistryMode = {
  name: 'oci',
  async target(ctx) {
    const { host, namespace } = settingOf(ctx);
    const creds = await credentials(ctx);
    return { host, repository: (service, image) => image ?? `${host}/${namespace ?? ctx.projectSlug}/${service}`, push: { host, ...creds } };
  },
  async pullSecret(ctx): Promise<DockerConfigJson> {
    const { host } = settingOf(ctx);
    const { username, password } = await credentials(ctx);
    return { auths: { [host]: { auth: Buffer.from(`${username}:${password}`).toString('base64') } } };
  },
};

export default mode;
