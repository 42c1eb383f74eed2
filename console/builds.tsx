import { useRef, useState } from 'preact/hooks';
import { svc, enc, type Build, type BuildArtifact, type BuildRun, type Schemas } from './api.ts';
import { usePoll } from './live.ts';
import { Badge, ErrorNote, Section, when } from './ui.tsx';

const PAGE = 20;
export const ACTIVE = ['pending', 'building'];

/** How long a run took, or has been taking while it runs. */
export function duration(run: Pick<BuildRun, 'started_at' | 'completed_at' | 'status'> | null | undefined): string {
  if (!run?.started_at) return '–';
  const end = run.completed_at ? Date.parse(run.completed_at) : ACTIVE.includes(run.status) ? Date.now() : null;
  if (end === null) return '–';
  const s = Math.max(0, Math.round((end - Date.parse(run.started_at)) / 1000));
  return s < 60
    ? `${s}s`
    : s < 3600
      ? `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`
      : `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** The inputs of a build the console reads: the version it tags, its platforms, and the pipeline step that made it. */
export function buildInputs(build: Build): { version?: string; platforms?: string[]; pipeline_run_id?: string; step_name?: string } {
  return build.inputs as ReturnType<typeof buildInputs>;
}

export const shortSha = (sha: string) => sha.slice(0, 12);

/** The services of a build; with its images once a run completed. */
export function ServicesOf({ build, images }: { build: Build; images?: BuildArtifact[] }) {
  if (images?.length)
    return (
      <ul class="plain">
        {images.map((i) => (
          <li key={i.service_name}>
            <strong>{i.service_name}</strong> <span class="mono muted">{i.image_ref}</span>
          </li>
        ))}
      </ul>
    );
  return build.services ? <>{build.services.join(', ')}</> : <span class="muted">every service with build config</span>;
}

/** The project's builds, newest first, a page at a time, each with its latest run's status. */
export function BuildsPage({ projectId, projects }: { projectId: string; projects: Schemas['Project'][] }) {
  const [page, setPage] = useState<Schemas['BuildSpecList'] | null>(null);
  const [offset, setOffset] = useState(0);
  // Images of completed runs, fetched once per run (a completed run's images do not change).
  const known = useRef<Record<string, BuildArtifact[]>>({});
  const [images, setImages] = useState<Record<string, BuildArtifact[]>>({});
  const [error, setError] = useState<unknown>(null);
  usePoll(
    async () => {
      try {
        const p = await svc.GET('/projects/{project_id}/builds', { params: { project_id: projectId }, query: { limit: PAGE, offset } });
        setPage(p);
        setError(null);
        const missing = p.data.filter((b) => b.status === 'completed' && b.latest_run && !known.current[b.latest_run.id]);
        if (!missing.length) return;
        const found = await Promise.all(
          missing.map((b) => svc.GET('/builds/{build_id}/artifacts', { params: { build_id: b.id } }).catch(() => ({ data: [] }))),
        );
        missing.forEach((b, i) => (known.current[b.latest_run!.id] = found[i].data));
        setImages({ ...known.current });
      } catch (e) {
        setError(e);
      }
    },
    [projectId, offset],
    5000,
  );
  const project = projects.find((p) => p.id === projectId);
  const total = page?.pagination?.total ?? 0;
  return (
    <>
      <nav class="tabs">
        <a href={`/console/projects/${enc(projectId)}/jobs`}>Jobs</a>
        <a href={`/console/projects/${enc(projectId)}`}>Pipelines</a>
        <a href={`/console/projects/${enc(projectId)}/events`}>Events</a>
      </nav>
      <Section title={`Builds${project ? ` of ${project.name}` : ''}`}>
        <ErrorNote error={error} />
        {page && !page.data.length && (
          <p class="muted">No build yet: run a pipeline with a build step, or svc build create --project {project?.slug ?? projectId} --sha SHA.</p>
        )}
        {!!page?.data.length && (
          <table class="builds">
            <thead>
              <tr>
                <th>Build</th>
                <th>Status</th>
                <th>Commit</th>
                <th>Services</th>
                <th>Created</th>
                <th>Duration</th>
              </tr>
            </thead>
            <tbody>
              {page.data.map((b) => (
                <tr key={b.id} data-build={b.id} data-status={b.status}>
                  <td>
                    <a class="mono" href={`/console/builds/${enc(b.id)}`}>
                      {b.id}
                    </a>
                    {buildInputs(b).step_name && <div class="muted">pipeline step {buildInputs(b).step_name}</div>}
                  </td>
                  <td>
                    <Badge value={b.status} />
                    {b.latest_run?.error_class && <div class="muted">{b.latest_run.error_class}</div>}
                  </td>
                  <td>
                    <span class="mono" title={b.git_sha}>
                      {shortSha(b.git_sha)}
                    </span>
                    {buildInputs(b).version && <div>version {buildInputs(b).version}</div>}
                  </td>
                  <td>
                    <ServicesOf build={b} images={b.latest_run ? images[b.latest_run.id] : undefined} />
                  </td>
                  <td>{when(b.created_at)}</td>
                  <td>{b.latest_run?.reused_from ? 'reused' : duration(b.latest_run)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {total > PAGE && (
          <div class="actions pager">
            <button disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
              Newer
            </button>
            <span class="muted">
              {offset + 1}–{offset + (page?.data.length ?? 0)} of {total}
            </span>
            <button disabled={!page?.pagination?.has_more} onClick={() => setOffset(offset + PAGE)}>
              Older
            </button>
          </div>
        )}
      </Section>
    </>
  );
}
