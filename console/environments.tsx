import { useState } from 'preact/hooks';
import { svc, enc, type Schemas } from './api.ts';
import { usePoll } from './live.ts';
import { LogLines, useLogStream } from './log-view.tsx';
import { Action, Badge, ErrorNote, Section, when } from './ui.tsx';
import { DeployReview } from './deploy-review.tsx';

type Environment = Schemas['Environment'];
type Deploy = Schemas['Deploy'];
type Release = Schemas['EnvironmentRelease'];

/** A release in a few characters: its tag, else its commit. */
const releaseName = (r: Release | null | undefined) => (r ? (r.tag ?? (r.git_sha ? r.git_sha.slice(0, 12) : (r.id ?? '–'))) : '–');

/** The project's environments: health, current release and whether suspended; one picked shows its deploy history, each deploy's log, and a rollback. */
export function EnvironmentsPage({ projectId }: { projectId: string }) {
  const [envs, setEnvs] = useState<Environment[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [picked, setPicked] = useState<string | null>(null);
  usePoll(
    () =>
      svc.GET('/projects/{project_id}/environments', { params: { project_id: projectId }, query: { limit: 100 } }).then((page) => {
        setError(null);
        setEnvs(page.data);
      }, setError),
    [projectId],
    5000,
  );
  const env = envs?.find((e) => e.name === picked) ?? null;
  return (
    <>
      <Section title="Environments">
        <ErrorNote error={error} />
        {envs?.length === 0 && <p class="muted">No environments: the manifest's `environments:` declares them, or POST …/environments/ensure.</p>}
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Health</th>
              <th>Release</th>
              <th>Pipeline</th>
              <th>Checked</th>
            </tr>
          </thead>
          <tbody>
            {(envs ?? []).map((e) => (
              <tr key={e.id} class={e.name === picked ? 'picked' : undefined}>
                <td>
                  <button class="link" onClick={() => setPicked(e.name)} aria-label={`Deploys of ${e.name}`}>
                    {e.name}
                  </button>
                  {e.suspended && <Badge value="suspended" />}
                </td>
                <td>
                  <Badge value={e.health} />
                </td>
                <td class="mono">{releaseName(e.current_release)}</td>
                <td>{e.pipeline ?? '–'}</td>
                <td>{when(e.health_checked_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      {env && <Deploys key={env.name} projectId={projectId} env={env} />}
    </>
  );
}

function Deploys({ projectId, env }: { projectId: string; env: Environment }) {
  const [deploys, setDeploys] = useState<Deploy[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [logOf, setLogOf] = useState<string | null>(null);
  const params = { project_id: projectId, env: env.name };
  const reload = usePoll(
    () =>
      svc.GET('/projects/{project_id}/environments/{env}/deploys', { params, query: { limit: 20 } }).then((page) => {
        setError(null);
        setDeploys(page.data);
      }, setError),
    [projectId, env.name],
    3000,
  );
  return (
    <Section
      title={`Deploys of ${env.name}`}
      actions={
        <Action
          label="Roll back"
          kind="danger"
          confirm={`Deploy the release before ${releaseName(env.current_release)} to ${env.name} again?`}
          run={async () => {
            const deploy = await svc.POST('/projects/{project_id}/environments/{env}/rollback', { params, body: {} });
            setLogOf(deploy.id);
            reload();
          }}
        />
      }
    >
      <ErrorNote error={error} />
      {env.health_detail.length > 0 && (
        <ul class="plain">
          {env.health_detail.map((s) => (
            <li key={s.service}>
              <Badge value={s.health} /> {s.service} <span class="muted">{s.detail}</span>
            </li>
          ))}
        </ul>
      )}
      {deploys?.length === 0 && <p class="muted">Nothing deployed yet.</p>}
      <table>
        <thead>
          <tr>
            <th>Deploy</th>
            <th>Status</th>
            <th>Release</th>
            <th>From</th>
            <th>Started</th>
            <th>Ended</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(deploys ?? []).map((d) => (
            <tr key={d.id}>
              <td class="mono">{d.id}</td>
              <td>
                <Badge value={d.status} /> {d.rollback_of && <span class="muted">rollback</span>}
                {d.error_message && <div class="error">{d.error_message}</div>}
                {d.status === 'awaiting_approval' && <DeployReview projectId={projectId} env={env.name} deploy={d} onDone={reload} />}
                {d.status === 'waiting' && d.run_after && <div class="muted">runs {when(d.run_after)}</div>}
              </td>
              <td class="mono">{releaseName(d.release)}</td>
              <td class="mono">{releaseName(d.previous_release)}</td>
              <td>{when(d.created_at)}</td>
              <td>{when(d.completed_at)}</td>
              <td>
                <button class="link" onClick={() => setLogOf(logOf === d.id ? null : d.id)} aria-label={`Log of ${d.id}`}>
                  {logOf === d.id ? 'Hide log' : 'Log'}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {logOf && <DeployLog key={logOf} projectId={projectId} env={env.name} deployId={logOf} onEnd={reload} />}
    </Section>
  );
}

/** A deploy's log, followed live until the deploy ends (a deploy that had ended streams its lines and its end at once). */
function DeployLog({ projectId, env, deployId, onEnd }: { projectId: string; env: string; deployId: string; onEnd: () => void }) {
  const { lines, state } = useLogStream(`/projects/${enc(projectId)}/environments/${enc(env)}/deploys/${enc(deployId)}/logs?follow=true`, { end: onEnd });
  return (
    <div aria-label={`Log of ${deployId}`} data-testid="deploy-log">
      <p class="muted">
        Log of {deployId} <span class={`stream s-${state}`}>{state}</span>
      </p>
      {lines.length ? <LogLines lines={lines} follow={state !== 'ended'} /> : <p class="muted">No output yet…</p>}
    </div>
  );
}
