import { useState } from 'preact/hooks';
import { svc, type Delivery, type Schemas, type Webhook } from './api.ts';
import { usePoll } from './live.ts';
import { Action, Badge, ErrorNote, Section, when } from './ui.tsx';

/** The org's webhook subscriptions, each with its deliveries and their responses; test and replay. */
export function WebhooksPage({ orgId }: { orgId: string }) {
  const [hooks, setHooks] = useState<Webhook[]>([]);
  const [error, setError] = useState<unknown>(null);
  usePoll(
    () => svc.GET('/orgs/{org_id}/webhooks', { params: { org_id: orgId }, query: { limit: 100 } }).then((p) => setHooks(p.data), setError),
    [orgId],
    5000,
  );
  return (
    <Section title="Webhooks">
      <ErrorNote error={error} />
      {!hooks.length && <p class="muted">No webhook subscriptions (svc webhook create).</p>}
      {hooks.map((h) => (
        <Hook key={h.id} orgId={orgId} hook={h} />
      ))}
    </Section>
  );
}

function Hook({ orgId, hook }: { orgId: string; hook: Webhook }) {
  const [deliveries, setDeliveries] = useState<Delivery[]>([]);
  const [error, setError] = useState<unknown>(null);
  const reload = usePoll(
    () =>
      svc
        .GET('/orgs/{org_id}/webhooks/{wh_id}/deliveries', { params: { org_id: orgId, wh_id: hook.id }, query: { limit: 20 } })
        .then((p) => setDeliveries(p.data), setError),
    [hook.id],
    3000,
  );
  const [replay, setReplay] = useState<Schemas['WebhookReplay'] | null>(null);
  const replayFrom = async (eventId: string) => {
    setReplay(await svc.POST('/orgs/{org_id}/webhooks/{wh_id}/replays', { params: { org_id: orgId, wh_id: hook.id }, body: { from_event: eventId } }));
    reload();
  };
  return (
    <div class="hook">
      <h3>
        <span class="mono">{hook.url}</span> <Badge value={hook.enabled ? 'enabled' : 'disabled'} />
      </h3>
      <div class="actions">
        <Action
          label="Send a test"
          run={() => svc.POST('/orgs/{org_id}/webhooks/{wh_id}/test', { params: { org_id: orgId, wh_id: hook.id }, body: {} }).then(reload)}
        />
      </div>
      <ErrorNote error={error} />
      {replay && (
        <p class="replay" role="status">
          Replay <span class="mono">{replay.id}</span>: {replay.events_matched} events matched, {replay.events_enqueued} sent again, {replay.events_skipped}{' '}
          skipped (already received or in flight).
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Event</th>
            <th>Kind</th>
            <th>Status</th>
            <th>Response</th>
            <th>Attempts</th>
            <th>When</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((d) => (
            <tr key={d.id} data-delivery={d.status} data-kind={d.kind}>
              <td class="mono">{d.event_type}</td>
              <td>{d.kind}</td>
              <td>
                <Badge value={d.status} />
              </td>
              <td title={d.response_body ?? d.error ?? ''}>{d.response_status ?? d.error ?? '–'}</td>
              <td>{d.attempts}</td>
              <td>{when(d.created_at)}</td>
              <td>{d.kind === 'event' && d.event_id && <Action label="Replay from here" run={() => replayFrom(d.event_id!)} />}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
