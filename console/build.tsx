import { useState } from 'preact/hooks';
import { svc, enc, type Build, type BuildArtifact, type BuildRun, type PipelineRun, type Release, type Schemas } from './api.ts';
import { BuildLog } from './build-log.tsx';
import { ACTIVE, buildInputs, duration, ServicesOf, shortSha } from './builds.tsx';
import { usePoll } from './live.ts';
import { Action, Badge, ErrorNote, Section, when } from './ui.tsx';

const TYPEID = /^[a-z]+_[0-9a-z]{26}$/;

/** Who asked for it: you, a job (a pipeline or workflow step, linked), or a user or service account by id. */
function Who({ id, me }: { id: string | null; me: Schemas['User'] }) {
  if (!id) return <span class="muted">svc</span>;
  if (id === me.id) return <>{me.email}</>;
  if (!TYPEID.test(id))
    return (
      <>
        job{' '}
        <a class="mono" href={`/console/jobs/${enc(id)}`}>
          {id}
        </a>
      </>
    );
  return <span class="mono">{id}</span>;
}

/** Where the images go, in words. */
function registryOf(registry: Build['registry']): string {
  if (registry === null) return "the manifest's registry";
  if (registry === 'none') return 'none: the images stay in the build engine';
  if (registry === 'svc') return "svc's own registry";
  if (typeof registry === 'string') return registry;
  const r = registry as { host?: string; namespace?: string };
  return [r.host, r.namespace].filter(Boolean).join('/');
}

const size = (bytes: number | null) => (bytes === null ? '–' : bytes < 1 << 20 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / (1 << 20)).toFixed(1)} MiB`);

/** One build: what it builds, its runs, the live or paged log of a run, its failure, images and releases. */
export function BuildPage({
  buildId,
  me,
  projects,
  onProject,
}: {
  buildId: string;
  me: Schemas['User'];
  projects: Schemas['Project'][];
  onProject: (id: string) => void;
}) {
  const [build, setBuild] = useState<Build | null>(null);
  const [runs, setRuns] = useState<BuildRun[]>([]);
  const [images, setImages] = useState<BuildArtifact[]>([]);
  const [releases, setReleases] = useState<Release[]>([]);
  const [pipelineRun, setPipelineRun] = useState<PipelineRun | null>(null);
  const [chosen, setChosen] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const active = !build || ACTIVE.includes(build.status);
  const reload = usePoll(
    async () => {
      try {
        const b = await svc.GET('/builds/{build_id}', { params: { build_id: buildId } });
        setBuild(b);
        onProject(b.project_id);
        setRuns((await svc.GET('/builds/{build_id}/runs', { params: { build_id: buildId }, query: { limit: 100 } })).data);
        setImages((await svc.GET('/builds/{build_id}/artifacts', { params: { build_id: buildId } })).data);
        const all = await svc
          .GET('/projects/{project_id}/releases', { params: { project_id: b.project_id }, query: { limit: 100 } })
          .catch(() => ({ data: [] as Release[] }));
        setReleases(all.data.filter((r) => r.build_id === buildId));
        const from = buildInputs(b).pipeline_run_id;
        if (from)
          setPipelineRun(await svc.GET('/projects/{project_id}/runs/{run_id}', { params: { project_id: b.project_id, run_id: from } }).catch(() => null));
        setError(null);
      } catch (e) {
        setError(e);
      }
    },
    [buildId],
    2000,
    active,
  );
  if (!build) return <ErrorNote error={error} />;
  const run = runs.find((r) => r.id === chosen) ?? build.latest_run;
  const inputs = buildInputs(build);
  const project = projects.find((p) => p.id === build.project_id);
  const again = (force: boolean) => async () => {
    await svc.POST('/builds/{build_id}/runs', { params: { build_id: build.id }, body: { force_rebuild: force } });
    setChosen(null);
    reload();
  };
  return (
    <>
      <header class="page-head">
        <h1>
          Build <span class="mono">{build.id}</span>
        </h1>
        <Badge value={build.status} />
        <span class="muted">
          {shortSha(build.git_sha)} · {duration(build.latest_run)}
        </span>
      </header>
      <ErrorNote error={error} />
      <div class="actions" role="toolbar" aria-label="Build actions">
        {active && (
          <Action
            label="Cancel build"
            kind="danger"
            confirm="Cancel this build?"
            run={() => svc.POST('/builds/{build_id}/cancel', { params: { build_id: build.id }, body: {} }).then(reload)}
          />
        )}
        {!active && <Action label="Run again" run={again(false)} />}
        {!active && <Action label="Rebuild without reuse" run={again(true)} />}
      </div>
      {run?.status === 'failed' && (
        <section class="failure" role="alert" data-testid="failure">
          <h2>Failed{run.error_class ? `: ${run.error_class.replace('_', ' ')}` : ''}</h2>
          {run.failed_stage && (
            <p>
              at stage <code>{run.failed_stage}</code>
            </p>
          )}
          {run.error_message && <p>{run.error_message}</p>}
        </section>
      )}
      <div class="grid">
        <Section title="Build">
          <dl>
            <dt>Project</dt>
            <dd>
              <a href={`/console/projects/${enc(build.project_id)}/builds`}>{project?.name ?? build.project_id}</a>
            </dd>
            <dt>Commit</dt>
            <dd class="mono">{build.git_sha}</dd>
            {inputs.version && (
              <>
                <dt>Version</dt>
                <dd>{inputs.version}</dd>
              </>
            )}
            <dt>Services</dt>
            <dd>
              <ServicesOf build={build} />
            </dd>
            {!!inputs.platforms?.length && (
              <>
                <dt>Platforms</dt>
                <dd>{inputs.platforms.join(', ')}</dd>
              </>
            )}
            <dt>Registry</dt>
            <dd>{registryOf(build.registry)}</dd>
            <dt>Requested by</dt>
            <dd>
              {inputs.pipeline_run_id ? (
                <>
                  pipeline {pipelineRun?.pipeline_name ?? ''}{' '}
                  <a href={`/console/projects/${enc(build.project_id)}/runs/${enc(inputs.pipeline_run_id)}`}>run {inputs.pipeline_run_id}</a>, step{' '}
                  {inputs.step_name}
                </>
              ) : (
                <Who id={build.created_by} me={me} />
              )}
            </dd>
            <dt>Created</dt>
            <dd>{when(build.created_at)}</dd>
            <dt>Manifest</dt>
            <dd class="mono" title={build.manifest_hash}>
              {build.manifest_hash.slice(0, 19)}…
            </dd>
          </dl>
        </Section>
        <Section title="Images">
          {!images.length && <p class="muted">None yet: a completed run leaves its images here.</p>}
          <ul class="plain images">
            {images.map((i) => (
              <li key={i.service_name}>
                <strong>{i.service_name}</strong> <span class="mono">{i.image_ref}</span>
                <div class="muted">
                  <span class="mono" title={i.digest}>
                    {i.digest.slice(0, 19)}…
                  </span>{' '}
                  · {i.platforms.join(', ')} · {size(i.size_bytes)}
                </div>
              </li>
            ))}
          </ul>
          {!!releases.length && (
            <>
              <h3>Releases</h3>
              <ul class="plain">
                {releases.map((r) => (
                  <li key={r.id}>
                    <strong>{r.tag}</strong> {r.version && <span class="muted">version {r.version}</span>} {when(r.created_at)}
                  </li>
                ))}
              </ul>
            </>
          )}
        </Section>
      </div>
      <Section title="Runs">
        <table>
          <thead>
            <tr>
              <th>Run</th>
              <th>Status</th>
              <th>Outcome</th>
              <th>Requested by</th>
              <th>Started</th>
              <th>Duration</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.id} data-run={r.id} data-status={r.status} class={r.id === run?.id ? 'chosen' : undefined}>
                <td>
                  <button class="link mono" aria-pressed={r.id === run?.id} onClick={() => setChosen(r.id)} title="Show this run's log">
                    {r.id}
                  </button>
                </td>
                <td>
                  <Badge value={r.status} />
                </td>
                <td>
                  {r.reused_from
                    ? `reused the images of ${r.reused_from}`
                    : r.error_class
                      ? `${r.error_class}: ${r.error_message ?? ''}`
                      : r.force_rebuild
                        ? 'rebuilt without reuse'
                        : ''}
                </td>
                <td>
                  <Who id={r.created_by} me={me} />
                </td>
                <td>{when(r.started_at)}</td>
                <td>{duration(r)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      {run && <BuildLog key={run.id} buildId={build.id} run={run} onEnd={reload} />}
    </>
  );
}
