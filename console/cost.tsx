import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { svc, enc, type Schemas } from './api.ts';
import { usePoll } from './live.ts';
import { navigate } from './router.ts';
import { ErrorNote, Section, when } from './ui.tsx';

type Summary = Schemas['AnalyticsSummary'];
type Spend = Schemas['OrgSpend'];
type Figures = Schemas['SpendFigures'];
type ReportWindow = Spend['window'];
const WINDOWS: ReportWindow[] = ['1d', '7d', '30d', '90d'];

/** The org's analytics summary and spend over a window (`?window=`, 7d by default, as the API). */
export function CostPage({ orgId, projects }: { orgId: string; projects: Schemas['Project'][] }) {
  const asked = new URLSearchParams(location.search).get('window') as ReportWindow | null;
  const span = asked && WINDOWS.includes(asked) ? asked : '7d';
  const [summary, setSummary] = useState<Summary | null>(null);
  const [spend, setSpend] = useState<Spend | null>(null);
  const [summaryError, setSummaryError] = useState<unknown>(null);
  const [spendError, setSpendError] = useState<unknown>(null);
  usePoll(
    () => {
      const params = { org_id: orgId };
      const query = { window: span };
      const load = <T,>(answer: Promise<T>, set: (value: T | null) => void, fail: (e: unknown) => void) =>
        answer.then(
          (value) => {
            set(value);
            fail(null);
          },
          (e) => {
            set(null);
            fail(e);
          },
        );
      return Promise.all([
        load(svc.GET('/orgs/{org_id}/analytics/summary', { params, query }), setSummary, setSummaryError),
        load(svc.GET('/orgs/{org_id}/spend', { params, query }), setSpend, setSpendError),
      ]);
    },
    [orgId, span],
    30_000,
  );
  const projectName = (id: string) => projects.find((p) => p.id === id);
  return (
    <>
      <div class="page-head">
        <h1>Cost and activity</h1>
        <label class="inline">
          <span class="sr">Window</span>
          <select value={span} onChange={(e) => navigate(`/console/orgs/${enc(orgId)}/cost?window=${(e.target as HTMLSelectElement).value}`, true)}>
            {WINDOWS.map((w) => (
              <option key={w} value={w}>
                last {w}
              </option>
            ))}
          </select>
        </label>
        {summary && <span class="muted">as of {when(summary.as_of)}</span>}
      </div>
      <Section title="Activity">
        <ErrorNote error={summaryError} />
        {summary && (
          <div class="figures">
            <Figure name="projects" label="projects" value={summary.projects} />
            <Figure name="jobs-created" label="jobs created" value={summary.jobs.created} />
            <Figure name="jobs-completed" label="jobs completed" value={summary.jobs.completed} />
            <Figure name="jobs-failed" label="jobs failed" value={summary.jobs.failed} />
            <Figure name="jobs-active" label="jobs active now" value={summary.jobs.active} />
            <Figure name="pipeline-runs" label="pipeline runs" value={summary.pipelines.runs} />
            <Figure name="success-rate" label="runs succeeded" value={`${Math.round(summary.pipelines.success_rate * 100)}%`} />
            <Figure name="avg-duration" label="average run" value={`${Math.round(summary.pipelines.avg_duration_seconds)} s`} />
            <Figure
              name="environments"
              label="environments"
              value={summary.environments.total}
              detail={`${summary.environments.healthy} healthy · ${summary.environments.degraded} degraded · ${summary.environments.unknown} unknown`}
            />
          </div>
        )}
      </Section>
      <Section title="Spend">
        <ErrorNote error={spendError} />
        {spend && (
          <>
            <div class="figures">
              <Figure name="spend-total" label={`billed (${spend.currency})`} value={money(spend.totals.billed_cost, spend.currency)} />
              <Figure name="spend-attempts" label="attempts" value={spend.totals.attempts} />
              <Figure name="spend-base" label="base cost" value={money(spend.totals.base_cost_usd, 'USD')} />
              <Figure
                name="spend-tokens"
                label="tokens in / out"
                value={`${spend.totals.input_tokens.toLocaleString()} / ${spend.totals.output_tokens.toLocaleString()}`}
              />
            </div>
            {spend.totals.unconverted_usd > 0 && (
              <p class="muted">{money(spend.totals.unconverted_usd, 'USD')} more was billed in another currency than the org's current one.</p>
            )}
            {spend.totals.unpriced_attempts > 0 && <p class="muted">{spend.totals.unpriced_attempts} attempts used a model without a price.</p>}
            <Breakdown
              title="By project"
              column="Project"
              currency={spend.currency}
              rows={spend.by_project.map((r) => {
                const project = projectName(r.project_id);
                const key = project ? <a href={`/console/projects/${enc(project.id)}/jobs`}>{project.name}</a> : <span class="mono">{r.project_id}</span>;
                return [r.project_id, key, r];
              })}
            />
            <Breakdown
              title="By model"
              column="Model"
              currency={spend.currency}
              rows={spend.by_model.map((r) => [r.model, <span class="mono">{r.model}</span>, r])}
            />
            <Breakdown
              title="By harness"
              column="Harness"
              currency={spend.currency}
              rows={spend.by_harness.map((r) => [r.harness ?? '', r.harness ?? 'default', r])}
            />
            <Breakdown title="By day (UTC)" column="Day (UTC)" currency={spend.currency} rows={spend.by_day.map((r) => [r.day, r.day, r])} />
          </>
        )}
      </Section>
    </>
  );
}

function Figure({ name, label, value, detail }: { name: string; label: string; value: string | number; detail?: string }) {
  return (
    <div class="figure" data-figure={name}>
      <strong>{value}</strong>
      <span class="muted">{label}</span>
      {detail && <span class="muted">{detail}</span>}
    </div>
  );
}

function Breakdown({ title, column, currency, rows }: { title: string; column: string; currency: string; rows: [string, ComponentChildren, Figures][] }) {
  return (
    <>
      <h3>{title}</h3>
      {!rows.length ? (
        <p class="muted">Nothing billed in this window.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>{column}</th>
              <th>Billed</th>
              <th>Attempts</th>
              <th>Base (USD)</th>
              <th>Input tokens</th>
              <th>Output tokens</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(([key, label, f]) => (
              <tr key={key}>
                <td>{label}</td>
                <td>{money(f.billed_cost, currency)}</td>
                <td>{f.attempts}</td>
                <td>{money(f.base_cost_usd, 'USD')}</td>
                <td>{f.input_tokens.toLocaleString()}</td>
                <td>{f.output_tokens.toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** An amount in a currency, to the cent unless smaller (receipts keep six decimals). */
function money(amount: number, currency: string): string {
  const digits = amount !== 0 && Math.abs(amount) < 0.01 ? 6 : 2;
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency, minimumFractionDigits: 2, maximumFractionDigits: digits }).format(amount);
  } catch {
    return `${amount.toFixed(digits)} ${currency}`; // a code Intl does not know
  }
}
