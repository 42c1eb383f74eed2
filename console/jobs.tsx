import { useState } from 'preact/hooks';
import { svc, enc, type Job } from './api.ts';
import { usePoll } from './live.ts';
import { navigate } from './router.ts';
import { Badge, ErrorNote, Section, usd, when } from './ui.tsx';

const BOARD = ['ready', 'active', 'review', 'done', 'cancelled'] as const;
const PHASES = ['idea', 'backlog', ...BOARD];

const PAGE = 50;
const HARNESSES = ['harness_a', 'harness_b', 'harness_c', 'harness_d', 'harness_e', 'harness_f'];
/** The list's filters, as GET /projects/{id}/jobs takes them (empty: not filtered). */
const NO_FILTERS = { q: '', phase: '', harness: '', model: '', label: '', assignee: '', created_after: '', created_before: '' };
type Filters = typeof NO_FILTERS;

/** Milliseconds as the list shows them: `850 ms`, `42 s`, `3 min 5 s`, `2 h 4 min`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The project's jobs: a board by phase, a list searched and filtered on the server with what each job cost and took, and a form to create one. */
export function JobsPage({ projectId }: { projectId: string }) {
  const [page, setPage] = useState<{ jobs: Job[]; total: number } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [offset, setOffset] = useState(0);
  const asked = Object.fromEntries(Object.entries(filters).filter(([, v]) => v.trim() !== ''));
  /** The local midnight `days` after the picked day's, as the API's ISO time. */
  const midnight = (d: string | undefined, days = 0) => (d ? new Date(Date.parse(`${d}T00:00:00`) + days * 86_400_000).toISOString() : undefined);
  const reload = usePoll(
    () =>
      svc
        .GET('/projects/{project_id}/jobs', {
          params: { project_id: projectId },
          query: {
            ...asked,
            phase: asked.phase as Job['phase'] | undefined,
            created_after: midnight(asked.created_after),
            // the whole of the day picked as the last one
            created_before: midnight(asked.created_before, 1),
            include_figures: true,
            limit: PAGE,
            offset,
          },
        })
        .then((res) => {
          setError(null);
          setPage({ jobs: res.data, total: res.pagination?.total ?? res.data.length });
        }, setError),
    [projectId, JSON.stringify(filters), offset],
    3000,
  );
  const jobs = page?.jobs ?? [];
  const set = (key: keyof Filters) => (e: Event) => {
    setOffset(0);
    setFilters({ ...filters, [key]: (e.target as HTMLInputElement).value });
  };
  const cost = jobs.reduce((sum, j) => sum + (j.figures?.cost_usd ?? 0), 0);
  return (
    <>
      <NewJob projectId={projectId} onCreated={reload} />
      <Section title="Board">
        <div class="board">
          {BOARD.map((p) => (
            <div class="column" key={p}>
              <h3>
                <Badge value={p} /> {jobs.filter((j) => j.phase === p).length}
              </h3>
              {jobs
                .filter((j) => j.phase === p)
                .slice(0, 20)
                .map((j) => (
                  <a class="card" href={`/console/jobs/${enc(j.id)}`} key={j.id}>
                    <span class="mono">{j.id}</span>
                    <span>{j.title}</span>
                    {!!j.figures?.attempts && <span class="figures">{usd(j.figures.cost_usd)}</span>}
                  </a>
                ))}
            </div>
          ))}
        </div>
      </Section>
      <Section title="Jobs">
        <form class="filters" role="search" aria-label="Search jobs" onSubmit={(e) => e.preventDefault()}>
          <label>
            Search <input type="search" value={filters.q} onInput={set('q')} placeholder="words of the title or description" />
          </label>
          <label>
            Phase{' '}
            <select value={filters.phase} onChange={set('phase')}>
              <option value="">any</option>
              {PHASES.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
          </label>
          <label>
            Harness{' '}
            <select value={filters.harness} onChange={set('harness')}>
              <option value="">any</option>
              {HARNESSES.map((h) => (
                <option key={h}>{h}</option>
              ))}
            </select>
          </label>
          <label>
            Model <input value={filters.model} onInput={set('model')} size={14} />
          </label>
          <label>
            Label <input value={filters.label} onInput={set('label')} size={10} />
          </label>
          <label>
            Assignee <input value={filters.assignee} onInput={set('assignee')} size={10} />
          </label>
          <label>
            Created from <input type="date" value={filters.created_after} onInput={set('created_after')} />
          </label>
          <label>
            to <input type="date" value={filters.created_before} onInput={set('created_before')} />
          </label>
          {Object.keys(asked).length > 0 && (
            <button type="button" onClick={() => (setOffset(0), setFilters(NO_FILTERS))}>
              Clear
            </button>
          )}
        </form>
        <ErrorNote error={error} />
        <p class="muted" aria-live="polite">
          {page ? `${page.total} job${page.total === 1 ? '' : 's'}` : 'loading…'}
          {jobs.length > 0 && ` · ${offset + 1}–${offset + jobs.length} shown, their ended attempts cost ${usd(cost)}`}
        </p>
        <table>
          <thead>
            <tr>
              <th>Job</th>
              <th>Title</th>
              <th>Phase</th>
              <th>Harness</th>
              <th class="num">Cost</th>
              <th class="num">Duration</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {jobs.map((j) => (
              <tr key={j.id}>
                <td>
                  <a class="mono" href={`/console/jobs/${enc(j.id)}`}>
                    {j.id}
                  </a>
                </td>
                <td>{j.title}</td>
                <td>
                  <Badge value={j.phase} />
                </td>
                <td>{typeof j.harness?.harness === 'string' ? j.harness.harness : ''}</td>
                <td class="num">{j.figures?.attempts ? usd(j.figures.cost_usd) : '–'}</td>
                <td class="num">{j.figures?.attempts ? duration(j.figures.duration_ms) : '–'}</td>
                <td>{when(j.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <div class="pager">
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
            Newer
          </button>
          <button type="button" disabled={!page || offset + jobs.length >= page.total} onClick={() => setOffset(offset + PAGE)}>
            Older
          </button>
        </div>
      </Section>
    </>
  );
}

function NewJob({ projectId, onCreated }: { projectId: string; onCreated: () => void }) {
  const [description, setDescription] = useState('');
  const [review, setReview] = useState(false);
  const [error, setError] = useState<unknown>(null);
  return (
    <form
      class="new-job"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        try {
          const job = await svc.POST('/projects/{project_id}/jobs', {
            params: { project_id: projectId },
            body: { description, ...(review ? { review_required: 'human' } : {}) },
          });
          setDescription('');
          onCreated();
          navigate(`/console/jobs/${enc(job.id)}`);
        } catch (err) {
          setError(err);
        }
      }}
    >
      <label for="new-job">New job: what should the agent do?</label>
      <textarea id="new-job" rows={3} value={description} onInput={(e) => setDescription((e.target as HTMLTextAreaElement).value)} />
      <label class="inline">
        <input type="checkbox" checked={review} onChange={(e) => setReview((e.target as HTMLInputElement).checked)} /> a person reviews the result
      </label>
      <button class="primary" type="submit" disabled={!description.trim()}>
        Create job
      </button>
      <ErrorNote error={error} />
    </form>
  );
}
