import type { RegistryMode } from '../../../core/ports/registry.ts';

/**
 * `registry: svc`: the registry at `builds.native_registry` trusts svc's token endpoint; pushes log
 * in with a short-lived credential limited to the project's repositories (`<slug>/…`). Deployers
 * get the same kind of credential from POST /internal/registry/token, so no pull secret is made.
 */
const mode: RegistryMode = {
  name: 'svc',
  async target(ctx) {
    const host = ctx.nativeHost;
    if (!host) throw new Error("registry 'svc' needs builds.native_registry (the native registry's host:port)");
    return { host, repository: (service, image) => image ?? `${host}/${ctx.projectSlug}/${service}`, push: { host, ...(await ctx.nativeCredential()) } };
  },
  pullSecret: async () => null,
};

export default mode;
