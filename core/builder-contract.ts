/**
 * The builder contract: checks every builder passes, built-in or third-party, as the harness
 * contract does for harnesses. Framework-free: each check is a name and a function that throws on a
 * violation, so any test runner can run them:
 *
 *   for (const check of builderContract(myBuilder, fixtures)) test(check.name, async (t) => { await check.run(); t.pass(); });
 */
import { BUILD_ERROR_CLASSES, isBuildFailure, type Builder, type BuildRequest, type BuiltImage, type ServiceBuild } from './ports/builder.ts';

/** What the builder is asked to build: a repository it can reach and the services in it. */
export interface BuilderContractFixtures {
  repoUrl: string;
  gitSha: string;
  services: ServiceBuild[];
  /** A request that must fail (a service whose build breaks): checked to fail with a BuildFailure of a spec class. */
  failing?: { services: ServiceBuild[] };
}

export interface BuilderContractCheck {
  name: string;
  run(): void | Promise<void>;
}

export class BuilderContractError extends Error {
  override name = 'BuilderContractError';
}

const NAME = /^[a-z][a-z0-9_-]*$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

function fail(message: string): never {
  throw new BuilderContractError(message);
}

/** A request as svc makes one, with its log lines collected. */
function request(fixtures: BuilderContractFixtures, services: ServiceBuild[], signal = new AbortController().signal) {
  const lines: { line: unknown; stream: unknown }[] = [];
  const req: BuildRequest = {
    runId: 'brun_contract',
    repoUrl: fixtures.repoUrl,
    access: { env: {}, secrets: [], token: undefined },
    gitSha: fixtures.gitSha,
    repoCache: null,
    services,
    platforms: [],
    push: null,
    signal,
    log: (line, stream) => void lines.push({ line, stream }),
  };
  return { req, lines };
}

function checkImages(images: unknown, services: ServiceBuild[]): asserts images is BuiltImage[] {
  if (!Array.isArray(images)) fail(`build() must resolve to an array of built images, got ${typeof images}`);
  if (images.length !== services.length) fail(`build() answered ${images.length} image(s) for ${services.length} service(s)`);
  for (const service of services) {
    const image = images.find((i: BuiltImage) => i?.service_name === service.service) as BuiltImage | undefined;
    if (!image) fail(`no built image for service '${service.service}'`);
    if (image.image_ref !== service.image_ref) fail(`service '${service.service}': image_ref '${image.image_ref}', asked for '${service.image_ref}'`);
    if (!DIGEST.test(String(image.digest))) fail(`service '${service.service}': digest '${image.digest}' is not sha256:<64 hex>`);
    if (!Array.isArray(image.platforms) || !image.platforms.every((p) => typeof p === 'string'))
      fail(`service '${service.service}': platforms must be a list of strings`);
    if (image.size_bytes !== null && !(Number.isInteger(image.size_bytes) && image.size_bytes >= 0))
      fail(`service '${service.service}': size_bytes must be a whole number of bytes or null`);
  }
}

export function builderContract(builder: Builder, fixtures: BuilderContractFixtures): BuilderContractCheck[] {
  const checks: BuilderContractCheck[] = [
    {
      name: 'its name is a backend name (lower-case letters, digits, _ or -)',
      run: () => void (NAME.test(String(builder.name)) || fail(`name '${builder.name}' is not a backend name`)),
    },
    {
      name: 'available() answers ok, or not ok with a reason',
      run: async () => {
        const answer = await builder.available();
        if (answer?.ok === true) return;
        if (answer?.ok === false && typeof answer.reason === 'string' && answer.reason.trim()) return;
        fail(`available() answered ${JSON.stringify(answer)}`);
      },
    },
    {
      name: 'build() answers one image per service: the image_ref asked for, a sha256 digest, platforms and a size',
      run: async () => checkImages(await builder.build(request(fixtures, fixtures.services).req), fixtures.services),
    },
    {
      name: 'build() reports its output through request.log, one line at a time',
      run: async () => {
        const { req, lines } = request(fixtures, fixtures.services);
        await builder.build(req);
        if (lines.length === 0) fail('build() logged nothing: a run without output cannot be followed or debugged');
        for (const { line, stream } of lines) {
          if (typeof line !== 'string') fail(`a logged line is a ${typeof line}, not a string`);
          if (line.includes('\n')) fail(`a logged line holds a newline: ${JSON.stringify(line.slice(0, 80))}`);
          if (stream !== undefined && !['stdout', 'stderr', 'system'].includes(stream as string))
            fail(`stream '${String(stream)}' is not stdout, stderr or system`);
        }
      },
    },
    {
      name: 'a cancelled build rejects instead of answering images',
      run: async () => {
        const cancel = new AbortController();
        cancel.abort(new Error('cancelled by the contract'));
        const answered = await builder.build(request(fixtures, fixtures.services, cancel.signal).req).then(
          () => true,
          () => false,
        );
        if (answered) fail('build() with an aborted signal resolved; it must stop and reject');
      },
    },
  ];
  if (fixtures.failing) {
    const { services } = fixtures.failing;
    checks.push({
      name: 'a build that breaks fails with a BuildFailure of a spec error class',
      run: async () => {
        const outcome = await builder.build(request(fixtures, services).req).then(
          () => null,
          (err: unknown) => err,
        );
        if (outcome === null) fail('the failing request built');
        if (!isBuildFailure(outcome))
          fail(
            `it failed with ${String(outcome)}: not a BuildFailure (or an Error named 'BuildFailure') with an errorClass of ${BUILD_ERROR_CLASSES.join(', ')}`,
          );
      },
    });
  }
  return checks;
}
