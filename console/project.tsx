import { useState } from 'preact/hooks';
import { svc, enc, type PipelineRun, type SvcEvent } from './api.ts';
import { useStream, usePoll } from './live.ts';
import { Action, Badge, ErrorNote, Json, Section, when } from './ui.tsx';
import { RunPipeline } from './run-pipeline.tsx';
import { RunGraph } from './run-graph.tsx';
import { Linked } from './log-view.tsx';

interface Manifest {
  parsed?: {
    workflows?: Record<string, unknown>;
    pipelines?: Record<string, { inputs?: Record<string, unknown> }>;
    environments?: Record<string, { pipeline?: string }>;
  };
  synced_at?: string;
}

/** A project: its manifest's workflows, pipelines and environments, pipeline runs, and actions on them. */
export function ProjectPage({ projectId }: { projectId: string }) {
  const [manifest, setManifest] = useState<Manifest | null>(null);
  const [runs, setRuns] = useState<Record<string, PipelineRun[]>>({});
  const [error, setError] = useState<unknown>(null);
  usePoll(
    async () => {
      try {
        const m = await svc.GET('/projects/{project_id}/manifest', { params: { project_id: projectId } });
        setManifest(m);
        const names = Object.keys(m.parsed?.pipelines ?? {});
        const pages = await Promise.all(
          names.map((n) => svc.GET('/projects/{project_id}/pipelines/{name}/runs', { params: { project_id: projectId, name: n }, query: { limit: 10 } })),
        );
        setRuns(Object.fromEntries(names.map((n, i) => [n, pages[i].data])));
        setError(null);
      } catch (e) {
        setError(e);
      }
    },
    [projectId],
    5000,
  );
  const parsed = manifest?.parsed ?? {};
  return (
    <>
      <nav class="tabs">
        <a href={`/console/projects/${enc(projectId)}/jobs`}>Jobs</a>
        <a href={`/console/projects/${enc(projectId)}/builds`}>Builds</a>
        <a href={`/console/projects/${enc(projectId)}/events`}>Events</a>
      </nav>
      <ErrorNote error={error} />
      {manifest && !manifest.parsed && <p class="muted">No manifest synced yet (svc manifest sync).</p>}
      <Section title="Pipelines">
        {Object.keys(parsed.pipelines ?? {}).map((name) => (
          <div class="pipeline" key={name}>
            <h3>{name}</h3>
            <RunPipeline projectId={projectId} name={name} declares={!!parsed.pipelines?.[name]?.inputs} />
            <ul class="runs">
              {(runs[name] ?? []).map((r) => (
                <li key={r.id}>
                  <a href={`/console/projects/${enc(projectId)}/runs/${enc(r.id)}`} class="mono">
                    {r.id}
                  </a>{' '}
                  <Badge value={r.status} /> {when(r.created_at)}
                </li>
              ))}
            </ul>
          </div>
        ))}
      </Section>
      <Section title="Workflows">
        {Object.keys(parsed.workflows ?? {}).map((name) => (
          <Invoke key={name} projectId={projectId} name={name} />
        ))}
      </Section>
      <Section title="Environments">
        <ul>
          {Object.entries(parsed.environments ?? {}).map(([name, env]) => (
            <li key={name}>
              <strong>{name}</strong> {env.pipeline && <span class="muted">pipeline {env.pipeline}</span>}
            </li>
          ))}
        </ul>
      </Section>
    </>
  );
}

function Invoke({ projectId, name }: { projectId: string; name: string }) {
  const [input, setInput] = useState('{}');
  const [result, setResult] = useState<{ job_id?: string; status?: string } | null>(null);
  const [error, setError] = useState<unknown>(null);
  return (
    <form
      class="invoke"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        try {
          setResult(
            await svc.POST('/projects/{project_id}/workflows/{name}/invoke', { params: { project_id: projectId, name }, body: { input: JSON.parse(input) } }),
          );
        } catch (err) {
          setError(err);
        }
      }}
    >
      <h3>{name}</h3>
      <label for={`input-${name}`}>Input (JSON)</label>
      <textarea id={`input-${name}`} class="mono" rows={3} value={input} onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)} />
      <button type="submit">Invoke {name}</button>
      <ErrorNote error={error} />
      {result?.job_id && (
        <p class="invoked">
          Started{' '}
          <a class="mono" href={`/console/jobs/${enc(result.job_id)}`}>
            {result.job_id}
          </a>{' '}
          <Badge value={result.status} />
        </p>
      )}
    </form>
  );
}

/** A pipeline run: its step graph with live status, step logs, approve and cancel. */
export function RunPage({ projectId, runId }: { projectId: string; runId: string }) {
  const [run, setRun] = useState<PipelineRun | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [logs, setLogs] = useState<{ step: string; line: string }[]>([]);
  const load = () =>
    svc.GET('/projects/{project_id}/runs/{run_id}', { params: { project_id: projectId, run_id: runId } }).then((r) => {
      setRun(r);
      setError(null);
    }, setError);
  const open = !!run && !['succeeded', 'failed', 'cancelled'].includes(run.status);
  const reload = usePoll(load, [projectId, runId], 5000, open);
  // The run's stream closes once the run has ended; it is opened only while the run is open.
  const state = useStream(open || !run ? `/pipeline-runs/${enc(runId)}/stream` : null, {
    'run.status': () => void load(),
    'step.status': () => void load(),
    'step.log': (data) => {
      const d = data as { step_name: string; line: string };
      setLogs((all) => [...all, { step: d.step_name, line: d.line }]);
    },
    end: () => void load(),
  });
  if (!run) return <ErrorNote error={error} />;
  return (
    <>
      <header class="page-head">
        <h1>
          {run.pipeline_name} <span class="mono">{run.id}</span>
        </h1>
        <Badge value={run.status} />
        <span class={`stream s-${open ? state : 'ended'}`}>{open ? state : 'ended'}</span>
      </header>
      <ErrorNote error={error} />
      <div class="actions">
        {run.status === 'awaiting_approval' && (
          <Action
            label="Approve"
            kind="primary"
            run={() => svc.POST('/pipeline-runs/{run_id}/approve', { params: { run_id: run.id }, body: {} }).then(reload)}
          />
        )}
        {open && (
          <Action
            label="Cancel run"
            kind="danger"
            confirm="Cancel this run?"
            run={() => svc.POST('/pipeline-runs/{run_id}/cancel', { params: { run_id: run.id }, body: {} }).then(reload)}
          />
        )}
      </div>
      <Section title="Steps">
        <RunGraph steps={run.steps ?? []} />
      </Section>
      <Section title="Step logs">
        <pre class="log">
          {logs.map((l, i) => (
            <div key={i}>
              <span class="muted">[{l.step}]</span> <Linked text={l.line} />
            </div>
          ))}
        </pre>
      </Section>
    </>
  );
}

/** The project's recent events and how its triggers routed each. */
export function EventsPage({ projectId }: { projectId: string }) {
  const [events, setEvents] = useState<SvcEvent[]>([]);
  const [error, setError] = useState<unknown>(null);
  usePoll(
    () => svc.GET('/projects/{project_id}/events', { params: { project_id: projectId }, query: { limit: 50 } }).then((p) => setEvents(p.data), setError),
    [projectId],
    5000,
  );
  return (
    <Section title="Events">
      <ErrorNote error={error} />
      {events.map((e) => (
        <details key={e.id} class="event">
          <summary>
            <span class="mono">{e.type}</span> <Badge value={e.status} /> {when(e.created_at)} · matched {e.routing?.matched?.length ?? 0}
          </summary>
          {e.routing?.matched?.map((m, i) => (
            <p key={i}>
              ✓ {m.kind} <strong>{m.name}</strong> {m.run_id && <a href={`/console/projects/${enc(projectId)}/runs/${enc(m.run_id)}`}>run</a>}
              {m.job_id && <a href={`/console/jobs/${enc(m.job_id)}`}>job</a>} {m.error}
            </p>
          ))}
          {e.routing?.not_matched?.map((m, i) => (
            <p key={i} class="muted">
              ✗ {m.kind} {m.name}: {m.reason}
            </p>
          ))}
          <Json value={e.payload_json} />
        </details>
      ))}
    </Section>
  );
}
