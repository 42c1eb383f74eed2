/** Human renderings of job responses: a one-line summary, nested key/value blocks, the context and the tree. */
import { cell, formatFields, type Column } from '../output.ts';
import { isObject } from '../../core/is-object.ts';

type Obj = Record<string, unknown>;
const isObj = isObject;

export const JOB_FIELDS = [
  'id',
  'project_id',
  'parent_id',
  'title',
  'phase',
  'priority',
  'issue_type',
  'labels',
  'assignee',
  'review_required',
  'review_status',
  'defer_until',
  'due_at',
  'created_at',
  'updated_at',
  'closed_at',
  'close_reason',
];

export const JOB_COLUMNS: Column[] = [{ key: 'id' }, { key: 'phase' }, { key: 'priority', header: 'PRI' }, { key: 'title' }];

const ENDED_WIDTH = 70;
const ENDED: Column = {
  key: 'close_reason',
  header: 'ENDED BECAUSE',
  format: (v) => (typeof v === 'string' ? (v.length > ENDED_WIDTH ? `${v.slice(0, ENDED_WIDTH - 1)}…` : v) : ''),
};

/** The job table's columns: why a job ended (failed, timed out, cancelled by someone) when any row says. */
export function jobColumnsFor(rows: unknown[]): Column[] {
  return rows.some((row) => isObj(row) && typeof row.close_reason === 'string' && row.close_reason !== '') ? [...JOB_COLUMNS, ENDED] : JOB_COLUMNS;
}

/** `id  [phase]  P2  title` (or `{job}` inside a wrapper). */
export function jobLine(v: unknown): string {
  if (!isObj(v)) return cell(v);
  const job = isObj(v.job) ? v.job : v;
  const parts = [
    job.id === undefined ? undefined : String(job.id),
    job.phase ? `[${String(job.phase)}]` : undefined,
    job.priority !== undefined && job.priority !== null ? `P${String(job.priority)}` : undefined,
    job.title ? cell(job.title) : undefined,
  ];
  return parts.filter((p) => p !== undefined).join('  ');
}

/** Nested objects as indented `key: value` blocks; arrays of objects as `- ` items. */
export function formatNested(value: unknown, indent = ''): string {
  if (!isObj(value)) return `${indent}${cell(value)}`;
  const lines: string[] = [];
  const scalars: [string, unknown][] = [];
  const flush = () => {
    if (scalars.length)
      lines.push(
        ...formatFields(scalars)
          .split('\n')
          .map((l) => indent + l),
      );
    scalars.length = 0;
  };
  for (const [key, v] of Object.entries(value)) {
    if (isObj(v) && Object.keys(v).length > 0) {
      flush();
      lines.push(`${indent}${key}:`, formatNested(v, `${indent}  `));
    } else if (Array.isArray(v) && v.some(isObj)) {
      flush();
      lines.push(`${indent}${key}:`);
      for (const item of v) lines.push(formatNested(item, `${indent}    `).replace(/^( *) {2}/, '$1- '));
    } else {
      scalars.push([key, v]);
    }
  }
  flush();
  return lines.join('\n');
}

/** USD to the micro-dollar (receipts keep six decimals), trailing zeros dropped down to cents: `$0.0123`, `$1.50`. */
const usd = (v: number): string => `$${v.toFixed(6).replace(/(\.\d{2}\d*?)0+$/, '$1')}`;

/**
 * A receipt as key: value blocks, then, when the coding CLI reported what the calls cost, its figure
 * in total and per model, beside svc's own price: the figure is shown, never billed.
 */
export function formatReceipt(body: unknown): string {
  const nested = formatNested(body);
  const receipt = isObj(body) ? body : {};
  const cost = isObj(receipt.cost) ? receipt.cost : {};
  if (typeof cost.reported_cost_usd !== 'number') return nested;
  const models = isObj(receipt.llm) && isObj(receipt.llm.models) ? receipt.llm.models : {};
  const lines = [nested, `reported by the CLI: ${usd(cost.reported_cost_usd)} (not billed)`];
  for (const [model, m] of Object.entries(models)) {
    if (!isObj(m) || typeof m.reported_cost_usd !== 'number') continue;
    const ours = typeof m.cost_usd === 'number' ? `priced ${usd(m.cost_usd)} as ${cell(m.priced_as)}` : 'no price on the rate card';
    lines.push(`  ${model}: ${usd(m.reported_cost_usd)} (${ours})`);
  }
  return lines.join('\n');
}

/**
 * A relation as the API reads it, `{job_id} <relation_type> {related_job_id}`, then the phase and title of
 * `related` (the job at the other end); anything else as a job line.
 */
export function relationLine(v: unknown): string {
  if (!isObj(v) || !v.relation_type || !v.job_id || !v.related_job_id) return jobLine(v);
  const other = isObj(v.related) ? v.related : {};
  return [
    `${String(v.job_id)} ${String(v.relation_type)} ${String(v.related_job_id)}`,
    other.phase ? `[${String(other.phase)}]` : undefined,
    other.title ? cell(other.title) : undefined,
  ]
    .filter((p) => p !== undefined)
    .join('  ');
}

/** `title:` then one indented line per item, or `title: none`. */
export const section = (title: string, items: unknown, line: (v: unknown) => string = jobLine): string[] => {
  const rows = Array.isArray(items) ? items : [];
  return [`${title}:${rows.length ? '' : ' none'}`, ...rows.map((r) => `  ${line(r)}`)];
};

/** GET /jobs/{id}/context for people: the job, where it stands, its family and its relations. */
export function formatContext(body: unknown): string {
  const c = isObj(body) ? body : {};
  const job = isObj(c.job) ? c.job : {};
  const relations = isObj(c.relations) ? c.relations : {};
  const effective = c.effective_phase ?? job.phase;
  const notes = [
    effective !== job.phase ? `job phase ${cell(job.phase)}` : undefined,
    c.blocked && effective !== 'blocked' ? 'blocked' : undefined,
    c.waiting && effective !== 'waiting' ? 'waiting' : undefined,
  ].filter(Boolean);
  const head: [string, unknown][] = [
    ['job', jobLine(job)],
    ['effective_phase', `${cell(effective)}${notes.length ? ` (${notes.join('; ')})` : ''}`],
    ['parent', c.parent ? jobLine(c.parent) : null],
  ];
  const attempt = isObj(c.latest_attempt) ? c.latest_attempt : null;
  const lines = [formatFields(head), ...section('children', c.children)];
  for (const key of ['dependencies', 'dependents', 'blocking']) lines.push(...section(key, relations[key], relationLine));
  lines.push(`latest_attempt:${attempt ? '' : ' none'}`);
  if (attempt) {
    const keys = ['id', 'attempt_number', 'status', 'result_summary', 'started_at', 'ended_at'].filter((k) => k in attempt);
    const work = workLine(attempt);
    lines.push(
      ...formatFields([...keys.map((k): [string, unknown] => [k, attempt[k]]), ...(work ? [['work', work] as [string, unknown]] : [])])
        .split('\n')
        .map((l) => `  ${l}`),
    );
  }
  if (c.latest_rejection_reason) lines.push(formatFields([['latest_rejection_reason', c.latest_rejection_reason]]));
  return lines.join('\n');
}

/** What became of an attempt's changes, from its git: committed (and pushed or not), or left uncommitted and why. */
export function workLine(attempt: unknown): string | null {
  const git = isObj(attempt) && isObj(attempt.git) ? attempt.git : null;
  if (!git) return null;
  const commits = Array.isArray(git.commits) ? (git.commits as string[]) : [];
  const uncommitted = isObj(git.uncommitted) ? git.uncommitted : null;
  if (uncommitted) return `${uncommitted.files} file${uncommitted.files === 1 ? '' : 's'} changed, not committed: ${uncommitted.reason}`;
  if (!commits.length) return 'no changes committed';
  const committed = `committed ${commits.map((c) => c.slice(0, 12)).join(', ')}`;
  return git.pushed ? `${committed}, pushed to ${git.resolved_branch ?? 'the remote'}` : `${committed}, not pushed`;
}

/** A job's pull request in one line: number, state, latest review and page. */
export function pullRequestLine(pr: unknown): string | null {
  if (!isObj(pr)) return null;
  const review = typeof pr.review === 'string' ? `, ${pr.review.replace('_', ' ')}` : '';
  return `#${pr.number} ${pr.state}${review} ${pr.url}`;
}

interface TreeNode {
  job: Obj;
  children: TreeNode[];
}

/** GET /jobs/{id}/tree nests `{job, children: [{job, children}]}`. */
export function treeNodes(body: unknown): TreeNode[] {
  const nested = (v: Obj): TreeNode => ({
    job: isObj(v.job) ? v.job : v,
    children: (Array.isArray(v.children) ? v.children : []).filter(isObj).map(nested),
  });
  return isObj(body) ? [nested(body)] : [];
}

/** The tree drawn with guides: `├── child`, `│   └── grandchild`. */
export function formatTree(body: unknown): string {
  const lines: string[] = [];
  const walk = (node: TreeNode, prefix: string, last: boolean, root: boolean) => {
    lines.push(root ? jobLine(node.job) : `${prefix}${last ? '└── ' : '├── '}${jobLine(node.job)}`);
    const next = root ? '' : `${prefix}${last ? '    ' : '│   '}`;
    node.children.forEach((child, i) => walk(child, next, i === node.children.length - 1, false));
  };
  for (const root of treeNodes(body)) walk(root, '', true, true);
  return lines.length ? lines.join('\n') : 'No jobs.';
}
