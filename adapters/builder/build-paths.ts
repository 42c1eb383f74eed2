import { lstat, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { BuildFailure, type ServiceBuild } from '../../core/ports/builder.ts';

/** A service's build context and Dockerfile in a checkout, as real paths (no link left in them). */
export interface BuildPaths {
  context: string;
  dockerfile: string;
}

/** As the kernel's own limit on links followed while resolving one path (ELOOP). */
const MAX_LINKS = 40;

/**
 * Where the builder may read a service's build from a checkout of the repository. The checkout is
 * the tenant's: any part of `build.context` or `build.dockerfile` may be a symbolic link, and Docker
 * follows links when it opens the context folder and reads the Dockerfile (and `.dockerignore`) on
 * the host. So each is resolved here, link by link, and every step must stay inside the checkout's
 * real root; the builder is then given the real paths, which hold no link for it to follow. A path
 * that leaves the checkout (by `..` or through a link, even a dangling one) or does not exist is a
 * build_error naming the manifest field, the path and the refused link. Nothing outside the checkout
 * is ever looked at, so the message says nothing about the host beyond what the link itself says.
 *
 * Links inside the context are left alone: BuildKit's context transfer (and the classic builder's
 * tar) sends a link as a link and never reads its target, and COPY resolves links within the
 * context it received, so they cannot reach the host (docs/security.md, "Build contexts").
 */
export async function containedBuildPaths(checkout: string, service: ServiceBuild): Promise<BuildPaths> {
  const root = await realpath(checkout);
  const field = (key: 'context' | 'dockerfile') => `services.${service.service}.build.${key}`;
  const context = await resolveInside(root, root, service.context, field('context'));
  if (!(await stat(context)).isDirectory()) throw new BuildFailure('build_error', `${field('context')} '${service.context}' is not a folder of the repository`);
  if (!isInside(context, path.resolve(context, service.dockerfile)))
    throw new BuildFailure('build_error', `${field('dockerfile')} '${service.dockerfile}' leaves the build context: refused`);
  const dockerfile = await resolveInside(root, context, service.dockerfile, field('dockerfile'));
  if (!(await stat(dockerfile)).isFile())
    throw new BuildFailure('build_error', `${field('dockerfile')} '${service.dockerfile}' is not a file of the repository`);
  // The Docker CLI reads these too when they exist: <context>/.dockerignore and <Dockerfile>.dockerignore.
  for (const ignore of [path.join(context, '.dockerignore'), `${dockerfile}.dockerignore`]) {
    const relative = path.relative(root, ignore);
    if (await lstat(ignore).catch(() => null)) await resolveInside(root, root, relative, `${field('context')} (its ${path.basename(ignore)})`);
  }
  return { context, dockerfile };
}

/**
 * `relative` from `base` (a real folder inside the real `root`), resolved one component at a time
 * as the kernel would, following each link; a build_error as soon as a step leaves `root`.
 */
async function resolveInside(root: string, base: string, relative: string, field: string): Promise<string> {
  const refuse = (why: string): never => {
    throw new BuildFailure('build_error', `${field} '${relative}' ${why}: refused`);
  };
  if (!isInside(root, path.resolve(base, relative))) refuse('leaves the repository');
  let done = base;
  const todo = relative.split(/[\\/]+/).filter(Boolean);
  let links = 0;
  /** The last link followed, for the message of a `..` of its target that climbs out. */
  let via = '';
  while (todo.length > 0) {
    const part = todo.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      done = path.dirname(done);
      if (!isInside(root, done)) refuse(`goes through ${via || 'a ..'}, which leaves the repository`);
      continue;
    }
    const next = path.join(done, part);
    const info = await lstat(next).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return null;
      throw e;
    });
    if (!info) return refuse(`does not exist in the repository (no ${path.relative(root, next) || '.'})`);
    if (!info.isSymbolicLink()) {
      done = next;
      continue;
    }
    if (++links > MAX_LINKS) refuse(`goes through more than ${MAX_LINKS} symbolic links`);
    const target = await readlink(next);
    via = `the symbolic link ${path.relative(root, next)} -> ${target}`;
    if (path.isAbsolute(target)) {
      // Only an absolute target spelled inside the checkout can stay in it.
      if (!target.startsWith(root + path.sep)) refuse(`goes through ${via}, which leaves the repository`);
      done = root;
      todo.unshift(...target.slice(root.length).split('/').filter(Boolean));
    } else {
      // Taken from the link's own folder (`done`); its `..` steps are checked as they are taken.
      todo.unshift(...target.split('/').filter(Boolean));
    }
  }
  return done;
}

const isInside = (root: string, p: string) => p === root || p.startsWith(root + path.sep);
