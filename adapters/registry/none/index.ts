import type { RegistryMode } from '../../../core/ports/registry.ts';

/** `registry: none`: images stay in the build engine, named `<project slug>/<service>`; nothing to pull. */
const mode: RegistryMode = {
  name: 'none',
  target: async (ctx) => ({ host: null, repository: (service, image) => image ?? `${ctx.projectSlug}/${service}`, push: null }),
  pullSecret: async () => null,
};

export default mode;
