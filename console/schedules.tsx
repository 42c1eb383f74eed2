import { useState } from 'preact/hooks';
import { svc, type Schemas } from './api.ts';
import { usePoll } from './live.ts';
import { Action, Badge, ErrorNote, Section, when } from './ui.tsx';

type Schedule = Schemas['Schedule'];

/** The project's schedules: each with its cron, the event it raises and when it last fired; pause, resume, delete, and a form to add one. */
export function SchedulesPage({ projectId }: { projectId: string }) {
  const [schedules, setSchedules] = useState<Schedule[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const reload = usePoll(
    () =>
      svc.GET('/projects/{project_id}/schedules', { params: { project_id: projectId }, query: { limit: 100 } }).then((page) => {
        setError(null);
        setSchedules(page.data);
      }, setError),
    [projectId],
    5000,
  );
  const change = (s: Schedule, body: { enabled: boolean }) => async () => {
    await svc.PATCH('/projects/{project_id}/schedules/{schedule_id}', { params: { project_id: projectId, schedule_id: s.id }, body });
    reload();
  };
  return (
    <>
      <NewSchedule projectId={projectId} onCreated={reload} />
      <Section title="Schedules">
        <ErrorNote error={error} />
        {schedules?.length === 0 && <p class="muted">No schedules yet: a schedule raises an event on its cron, and the manifest's triggers act on it.</p>}
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Cron</th>
              <th>Event</th>
              <th>State</th>
              <th>Last fired</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {(schedules ?? []).map((s) => (
              <tr key={s.id}>
                <td>{s.name ?? <span class="mono">{s.id}</span>}</td>
                <td class="mono">{s.cron}</td>
                <td class="mono">{s.event_type}</td>
                <td>
                  <Badge value={s.enabled ? 'active' : 'paused'} />
                </td>
                <td>{when(s.last_fired_at)}</td>
                <td>
                  {s.enabled ? <Action label="Pause" run={change(s, { enabled: false })} /> : <Action label="Resume" run={change(s, { enabled: true })} />}
                  <Action
                    label="Delete"
                    kind="danger"
                    confirm={`Delete the schedule ${s.name ?? s.id}?`}
                    run={async () => {
                      await svc.DELETE('/projects/{project_id}/schedules/{schedule_id}', { params: { project_id: projectId, schedule_id: s.id } });
                      reload();
                    }}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
    </>
  );
}

function NewSchedule({ projectId, onCreated }: { projectId: string; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [cron, setCron] = useState('');
  const [eventType, setEventType] = useState('cron.tick');
  const [error, setError] = useState<unknown>(null);
  return (
    <Section title="New schedule">
      <form
        class="filters"
        aria-label="New schedule"
        onSubmit={async (e) => {
          e.preventDefault();
          setError(null);
          try {
            await svc.POST('/projects/{project_id}/schedules', {
              params: { project_id: projectId },
              body: { name: name.trim() || null, cron: cron.trim(), event_type: eventType.trim() || 'cron.tick' },
            });
            setName('');
            setCron('');
            onCreated();
          } catch (err) {
            setError(err);
          }
        }}
      >
        <label>
          Name <input value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} placeholder="nightly tests" />
        </label>
        <label>
          Cron <input class="mono" value={cron} onInput={(e) => setCron((e.target as HTMLInputElement).value)} placeholder="0 3 * * *" />
        </label>
        <label>
          Event <input class="mono" value={eventType} onInput={(e) => setEventType((e.target as HTMLInputElement).value)} />
        </label>
        <button class="primary" type="submit" disabled={!cron.trim()}>
          Add schedule
        </button>
      </form>
      <ErrorNote error={error} />
    </Section>
  );
}
