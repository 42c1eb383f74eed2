import { useState } from 'preact/hooks';
import { svc, enc, type Schemas } from './api.ts';
import { usePoll } from './live.ts';
import { DiffView } from './diff.tsx';
import { Action, Badge, ErrorNote, Section, usd } from './ui.tsx';

type Race = Schemas['RaceComparison'];
type Entry = Race['attempts'][number];
type Variant = Schemas['RaceVariant'];

const variantText = (v: Variant) =>
  [v.harness ?? v.harness_profile ?? 'default harness', v.model, v.reasoning_effort && `effort ${v.reasoning_effort}`].filter(Boolean).join(' · ');
const duration = (ms: number | null) => (ms === null ? '–' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

function CheckCell({ check }: { check: Entry['check'] }) {
  if (!check) return <span class="muted">–</span>;
  return (
    <span title={check.output_tail}>
      <Badge value={check.passed ? 'passed' : 'failed'} /> {check.exit_code !== null && <span class="muted">exit {check.exit_code}</span>}
    </span>
  );
}

/**
 * A race's attempts side by side (GET /jobs/{id}/race, docs/worker.md "Rival attempts"): per
 * attempt its variant, check, diff size, cost, time, tokens and summary, a Choose button once every
 * lane has ended, and below the table each attempt's diff.
 */
export function RacePage({ jobId, onProject }: { jobId: string; onProject: (projectId: string) => void }) {
  const [race, setRace] = useState<Race | null>(null);
  const [error, setError] = useState<unknown>(null);
  const running = !race || race.lanes.some((l) => l.status !== 'ended');
  const reload = usePoll(
    async () => {
      try {
        const [r, job] = await Promise.all([
          svc.GET('/jobs/{job_id}/race', { params: { job_id: jobId } }),
          svc.GET('/jobs/{job_id}', { params: { job_id: jobId } }),
        ]);
        setRace(r);
        onProject(job.project_id);
        setError(null);
      } catch (e) {
        setError(e);
      }
    },
    [jobId],
    2000,
    running,
  );
  if (!race) return error ? <ErrorNote error={error} /> : <p class="muted">Loading the race…</p>;
  const choosable = race.phase === 'active' && !running;
  const ended = race.attempts.filter((a) => a.status !== 'running');
  return (
    <>
      <header class="page-head">
        <h1>
          Race of{' '}
          <a href={`/console/jobs/${enc(jobId)}`} class="mono">
            {jobId}
          </a>
        </h1>
        <Badge value={race.phase} />
      </header>
      <ErrorNote error={error} />
      <p>
        {race.lanes.length} variants
        {race.check_command && (
          <>
            , check <code>{race.check_command}</code>
          </>
        )}
        {'. '}
        {race.chosen
          ? `Attempt ${race.chosen} was chosen as the job's result.`
          : running
            ? 'Lanes are still running…'
            : 'Every lane has ended: choose the result.'}
      </p>
      <Section title="Attempts side by side">
        <table data-testid="race">
          <thead>
            <tr>
              <th>#</th>
              <th>Variant</th>
              <th>Status</th>
              <th>Check</th>
              <th>Diff</th>
              <th>Cost</th>
              <th>Time</th>
              <th>Tokens</th>
              <th>Summary</th>
              <th>Branch</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {race.attempts.map((a) => (
              <tr key={a.attempt_number} class={a.chosen ? 'chosen' : undefined} data-attempt={a.attempt_number}>
                <td>{a.attempt_number}</td>
                <td>{variantText(a.variant)}</td>
                <td>
                  <Badge value={a.status} /> {a.chosen && <Badge value="chosen" />}
                </td>
                <td>
                  <CheckCell check={a.check} />
                </td>
                <td>
                  {a.diff ? (
                    <>
                      {a.diff.files_total} file{a.diff.files_total === 1 ? '' : 's'} <span class="plus">+{a.diff.additions}</span>{' '}
                      <span class="minus">−{a.diff.deletions}</span>
                    </>
                  ) : (
                    '–'
                  )}
                </td>
                <td>{usd(a.cost_usd)}</td>
                <td>{duration(a.duration_ms)}</td>
                <td>{a.tokens.total_tokens}</td>
                <td>{a.result_summary ?? a.error ?? ''}</td>
                <td class="mono">{a.branch ?? '–'}</td>
                <td>
                  {choosable && a.status === 'succeeded' && a.result_status === 'success' && (
                    <Action
                      label="Choose"
                      kind="primary"
                      confirm={`Make attempt ${a.attempt_number} the job's result and delete the other attempts' branches?`}
                      run={async () => {
                        await svc.POST('/jobs/{job_id}/attempts/{attempt_number}/choose', {
                          params: { job_id: jobId, attempt_number: a.attempt_number },
                          body: {},
                        });
                        reload();
                      }}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {!race.attempts.length && <p class="muted">No lane has started yet: workers pick them up as they have room.</p>}
      </Section>
      {ended.map((a) => (
        <Section key={a.attempt_number} title={`Diff of attempt ${a.attempt_number} (${variantText(a.variant)})`}>
          <DiffView jobId={jobId} attemptNumber={a.attempt_number} />
        </Section>
      ))}
    </>
  );
}
