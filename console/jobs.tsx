import { useState } from 'preact/hooks';
import { svc, enc, type Job } from './api.ts';
import { usePoll } from './live.ts';
import { navigate } from './router.ts';
import { Badge, ErrorNote, Section, when } from './ui.tsx';

const BOARD = ['ready', 'active', 'review', 'done', 'cancelled'] as const;
const PHASES = ['idea', 'backlog', ...BOARD];

/** The project's jobs: a board by phase, a filterable list, and a form to create one. */
export function JobsPage({ projectId }: { projectId: string }) {
  const [jobs, setJobs] = useState<Job[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [phase, setPhase] = useState('');
  const [text, setText] = useState('');
  const reload = usePoll(
    () =>
      svc
        .GET('/projects/{project_id}/jobs', {
          params: { project_id: projectId },
          query: { limit: 100, phase: (phase || undefined) as Job['phase'] | undefined },
        })
        .then((page) => setJobs(page.data), setError),
    [projectId, phase],
    3000,
  );
  const shown = (jobs ?? []).filter((j) => !text || `${j.id} ${j.title ?? ''}`.toLowerCase().includes(text.toLowerCase()));
  return (
    <>
      <NewJob projectId={projectId} onCreated={reload} />
      <Section title="Board">
        <div class="board">
          {BOARD.map((p) => (
            <div class="column" key={p}>
              <h3>
                <Badge value={p} /> {(jobs ?? []).filter((j) => j.phase === p).length}
              </h3>
              {(jobs ?? [])
                .filter((j) => j.phase === p)
                .slice(0, 20)
                .map((j) => (
                  <a class="card" href={`/console/jobs/${enc(j.id)}`} key={j.id}>
                    <span class="mono">{j.id}</span>
                    <span>{j.title}</span>
                  </a>
                ))}
            </div>
          ))}
        </div>
      </Section>
      <Section title="Jobs">
        <div class="filters">
          <label>
            Phase{' '}
            <select value={phase} onChange={(e) => setPhase((e.target as HTMLSelectElement).value)}>
              <option value="">any</option>
              {PHASES.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
          </label>
          <label>
            Filter <input type="search" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} placeholder="id or title" />
          </label>
        </div>
        <ErrorNote error={error} />
        <table>
          <thead>
            <tr>
              <th>Job</th>
              <th>Title</th>
              <th>Phase</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((j) => (
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
                <td>{when(j.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
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
