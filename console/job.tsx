import { useState } from 'preact/hooks';
import { svc, enc, type Attempt, type Job, type Schemas } from './api.ts';
import { usePoll } from './live.ts';
import { Linked, LogLines, useLogStream } from './log-view.tsx';
import { navigate } from './router.ts';
import { GitView, workOf } from './git.tsx';
import { DiffView } from './diff.tsx';
import { Action, Badge, ErrorNote, Section, usd, when } from './ui.tsx';

type CreateJob = Schemas['CreateJobRequest'];
type Context = Schemas['JobContext'];
type Receipt = Schemas['Receipt'];
/** A model's entry in a receipt's llm.models (the OpenAPI document leaves that map untyped). */
type ModelUsage = { cost_usd: number | null; reported_cost_usd?: number | null; priced_as: string | null };
type Relation = { relation_type?: string; related?: { id?: string; title?: string; phase?: string } };

const JobLink = ({ id, title, phase }: { id?: string; title?: string; phase?: string }) => (
  <li>
    <a class="mono" href={`/console/jobs/${enc(id)}`}>
      {id}
    </a>{' '}
    {title} {phase && <Badge value={phase} />}
  </li>
);

/** Parent, children, relations and why the job waits, from GET /jobs/{id}/context. */
function ContextView({ context }: { context: Context }) {
  const relations = (context.relations ?? {}) as Record<string, Relation[] | undefined>;
  return (
    <dl>
      <dt>Effective phase</dt>
      <dd>
        <Badge value={context.effective_phase} /> {context.blocked && <Badge value="blocked" />} {context.waiting && <Badge value="waiting" />}
      </dd>
      {context.parent && (
        <>
          <dt>Parent</dt>
          <dd>
            <ul class="plain">
              <JobLink {...context.parent} />
            </ul>
          </dd>
        </>
      )}
      {!!context.children?.length && (
        <>
          <dt>Children</dt>
          <dd>
            <ul class="plain">
              {context.children.map((c) => (
                <JobLink key={c.id} {...c} />
              ))}
            </ul>
          </dd>
        </>
      )}
      {Object.entries(relations).map(([kind, list]) =>
        list?.length ? (
          <>
            <dt>{kind}</dt>
            <dd>
              <ul class="plain">
                {list.map((r) => (
                  <JobLink key={r.related?.id} {...r.related} />
                ))}
              </ul>
            </dd>
          </>
        ) : null,
      )}
      {context.latest_rejection_reason && (
        <>
          <dt>Last rejection</dt>
          <dd>{context.latest_rejection_reason}</dd>
        </>
      )}
    </dl>
  );
}

/**
 * Tokens, cost and phase timings of the newest attempt; what the coding CLI reported the calls cost,
 * when it did, beside svc's own price (shown, never billed).
 */
function ReceiptView({ receipt }: { receipt: Receipt }) {
  const llm = receipt.llm;
  const cost = receipt.cost as
    { base_cost_usd?: number; billed_cost?: { amount?: number | string; currency?: string }; reported_cost_usd?: number | null } | undefined;
  const phases = Object.entries((receipt.timing?.phases ?? {}) as Record<string, number>);
  const reported = Object.entries((llm?.models ?? {}) as Record<string, ModelUsage>).flatMap(([model, m]) =>
    typeof m.reported_cost_usd === 'number' ? [{ model, ours: m.cost_usd, as: m.priced_as, theirs: m.reported_cost_usd }] : [],
  );
  return (
    <dl>
      <dt>Tokens</dt>
      <dd>
        {llm?.input_tokens ?? 0} in · {llm?.output_tokens ?? 0} out · {llm?.cache_read_tokens ?? 0} cache read · {llm?.calls ?? 0} calls
      </dd>
      <dt>Cost</dt>
      <dd>
        {cost?.billed_cost ? `${cost.billed_cost.amount} ${cost.billed_cost.currency ?? ''}` : `$${(cost?.base_cost_usd ?? 0).toFixed(4)}`}
        {typeof cost?.reported_cost_usd === 'number' && (
          <>
            {' '}
            · reported by the CLI: {usd(cost.reported_cost_usd)} <span class="muted">(not billed)</span>
          </>
        )}
      </dd>
      {reported.map(({ model, ours, as, theirs }) => (
        <>
          <dt class="mono">{model}</dt>
          <dd>
            {ours === null ? <span class="muted">no price on the rate card</span> : `${usd(ours)} as ${as}`} · reported by the CLI: {usd(theirs)}
          </dd>
        </>
      ))}
      <dt>Billable</dt>
      <dd>{((receipt.timing?.billable_ms ?? 0) / 1000).toFixed(1)} s</dd>
      {phases.map(([name, ms]) => (
        <>
          <dt>{name}</dt>
          <dd>{(ms / 1000).toFixed(1)} s</dd>
        </>
      ))}
    </dl>
  );
}

/** One job: its context, attempts, the live log of the newest attempt, result, git, receipt and actions. */
export function JobPage({ jobId, onProject }: { jobId: string; onProject: (projectId: string) => void }) {
  const [job, setJob] = useState<Job | null>(null);
  const [attempts, setAttempts] = useState<Attempt[]>([]);
  const [context, setContext] = useState<Context | null>(null);
  const [receipt, setReceipt] = useState<Receipt | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [diffOf, setDiffOf] = useState<number | null>(null);
  const live = job?.phase === 'active' || job?.phase === 'ready';
  const reload = usePoll(
    async () => {
      try {
        const j = await svc.GET('/jobs/{job_id}', { params: { job_id: jobId } });
        setJob(j);
        onProject(j.project_id);
        setAttempts(
          (await svc.GET('/projects/{project_id}/jobs/{job_id}/attempts', { params: { project_id: j.project_id, job_id: jobId }, query: { limit: 100 } })).data,
        );
        setContext(await svc.GET('/jobs/{job_id}/context', { params: { job_id: jobId } }).catch(() => null));
        setReceipt(await svc.GET('/jobs/{job_id}/receipt', { params: { job_id: jobId } }).catch(() => null));
        setError(null);
      } catch (e) {
        setError(e);
      }
    },
    [jobId],
    2000,
    live,
  );
  if (!job) return <ErrorNote error={error} />;
  const newest = attempts.reduce<Attempt | null>((a, b) => (!a || b.attempt_number > a.attempt_number ? b : a), null);
  // The diff shown: the attempt picked in the table, else the newest that has ended (a running one has none yet).
  const shownDiff = diffOf ?? attempts.filter((a) => a.status !== 'running').reduce<number | null>((n, a) => Math.max(n ?? 0, a.attempt_number), null);
  const act = (run: () => Promise<unknown>) => async () => {
    await run();
    reload();
  };
  return (
    <>
      <header class="page-head">
        <h1>
          <span class="mono">{job.id}</span> {job.title}
        </h1>
        <Badge value={job.phase} />
      </header>
      <ErrorNote error={error} />
      <div class="actions" role="toolbar" aria-label="Job actions">
        {attempts.some((a) => a.race_lane !== null) && <a href={`/console/jobs/${enc(job.id)}/race`}>Compare the race</a>}
        {job.phase === 'active' && (
          <Action
            label="Submit for review"
            run={act(async () => {
              const summary = window.prompt('Summary of the work for the reviewer');
              if (summary) await svc.POST('/jobs/{job_id}/submit', { params: { job_id: job.id }, body: { summary } });
            })}
          />
        )}
        {job.phase === 'review' && (
          <Action label="Approve" kind="primary" run={act(() => svc.POST('/jobs/{job_id}/approve', { params: { job_id: job.id }, body: {} }))} />
        )}
        {job.phase === 'review' && (
          <Action
            label="Reject"
            run={act(async () => {
              const reason = window.prompt('Why is it rejected?');
              if (reason) await svc.POST('/jobs/{job_id}/reject', { params: { job_id: job.id }, body: { reason } });
            })}
          />
        )}
        {(job.phase === 'cancelled' || job.phase === 'done') && (
          // A closed job stays closed (the state machine has no way back): a retry is a new job asking the same.
          <Action
            label="Run again as a new job"
            run={async () => {
              const { title, description, review_required, labels, issue_type, priority } = job;
              const again = await svc.POST('/projects/{project_id}/jobs', {
                params: { project_id: job.project_id },
                body: {
                  title,
                  description: description ?? '',
                  review_required: review_required as CreateJob['review_required'],
                  labels,
                  issue_type: issue_type as CreateJob['issue_type'],
                  priority,
                },
              });
              navigate(`/console/jobs/${enc(again.id)}`);
            }}
          />
        )}
        {(job.phase === 'review' || job.phase === 'done') && !job.pull_request && job.resolved_git?.pushed === true && (
          <Action label="Open pull request" run={act(() => svc.POST('/jobs/{job_id}/pull-request', { params: { job_id: job.id }, body: {} }))} />
        )}
        {job.phase !== 'done' && job.phase !== 'cancelled' && (
          <Action
            label="Cancel"
            kind="danger"
            confirm="Cancel this job?"
            run={act(() => svc.PATCH('/jobs/{job_id}', { params: { job_id: job.id }, body: { phase: 'cancelled' } }))}
          />
        )}
      </div>
      <div class="grid">
        <Section title="Job">
          <dl>
            <dt>Project</dt>
            <dd>
              <a href={`/console/projects/${enc(job.project_id)}`}>{job.project_id}</a>
            </dd>
            <dt>Review</dt>
            <dd>
              {job.review_required ?? 'none'} {job.review_status && <Badge value={job.review_status} />}
            </dd>
            {job.pull_request && (
              <>
                <dt>Pull request</dt>
                <dd>
                  {/* The code host's page; anything but http(s) is shown, not linked. */}
                  {/^https?:\/\//i.test(job.pull_request.url) ? (
                    <a href={job.pull_request.url} rel="noreferrer noopener" target="_blank">
                      #{job.pull_request.number}
                    </a>
                  ) : (
                    `#${job.pull_request.number}`
                  )}{' '}
                  <Badge value={job.pull_request.state} /> {job.pull_request.review && <Badge value={job.pull_request.review} />}
                </dd>
              </>
            )}
            <dt>Created</dt>
            <dd>{when(job.created_at)}</dd>
            {job.close_reason && (
              <>
                <dt>Closed</dt>
                <dd>{job.close_reason}</dd>
              </>
            )}
          </dl>
          <p class="description">{job.description}</p>
        </Section>
        <Section title="Git">
          <GitView job={job} newest={newest} />
        </Section>
      </div>
      <Section title="Attempts">
        <table>
          <thead>
            <tr>
              <th>#</th>
              <th>Status</th>
              <th>Result</th>
              <th>Summary</th>
              <th>Work</th>
              <th>Started</th>
              <th>Ended</th>
              <th>Diff</th>
            </tr>
          </thead>
          <tbody>
            {attempts.map((a) => (
              <tr key={a.id} class={a.attempt_number === shownDiff ? 'chosen' : undefined}>
                <td>{a.attempt_number}</td>
                <td>
                  <Badge value={a.status} />
                </td>
                <td>
                  <Badge value={a.result_status} />
                </td>
                <td>
                  <Linked text={a.result_summary ?? a.error ?? ''} />
                </td>
                <td>{workOf(a.git as Record<string, unknown> | null)}</td>
                <td>{when(a.started_at)}</td>
                <td>{when(a.ended_at)}</td>
                <td>
                  {a.status !== 'running' && (
                    <button class="link" aria-label={`Diff of attempt ${a.attempt_number}`} onClick={() => setDiffOf(a.attempt_number)}>
                      Show
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {!attempts.length && <p class="muted">No attempt yet: a worker picks the job up when it is ready.</p>}
      </Section>
      {newest && <LiveLog key={newest.id} jobId={job.id} attempt={newest} onEnd={reload} />}
      {shownDiff !== null && (
        <Section title={`Diff of attempt ${shownDiff}`}>
          <DiffView key={`${job.id}-${shownDiff}`} jobId={job.id} attemptNumber={shownDiff} />
        </Section>
      )}
      <div class="grid">
        {context && (
          <Section title="Context">
            <ContextView context={context} />
          </Section>
        )}
        {receipt && (
          <Section title={`Receipt of attempt ${receipt.attempt_number}`}>
            <ReceiptView receipt={receipt} />
          </Section>
        )}
      </div>
    </>
  );
}

/** The attempt's output as it is written; resumes after the last line when the connection comes back. */
function LiveLog({ jobId, attempt, onEnd }: { jobId: string; attempt: Attempt; onEnd: () => void }) {
  const [progress, setProgress] = useState<string | null>(null);
  const { lines, state } = useLogStream(`/jobs/${enc(jobId)}/attempts/${enc(attempt.id)}/logs/stream`, {
    // The worker logs the agent's todo-list progress as `[progress] 50% Make the change`.
    line: (line) => {
      const todo = /^\[progress\]\s*(.*)$/.exec(line.line);
      if (todo) setProgress(todo[1]);
    },
    end: () => onEnd(),
  });
  return (
    <Section title={`Log of attempt ${attempt.attempt_number}`} actions={<span class={`stream s-${state}`}>{state}</span>}>
      {progress && <p class="progress">{progress}</p>}
      <LogLines lines={lines} />
    </Section>
  );
}
