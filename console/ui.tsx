import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError } from './api.ts';

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const text = error instanceof ApiError ? `${error.status}: ${error.message}` : String((error as Error).message ?? error);
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

export function Badge({ value }: { value: string | null | undefined }) {
  return <span class={`badge b-${value ?? 'none'}`}>{value ?? '–'}</span>;
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '–');

/** USD to the micro-dollar (receipts keep six decimals), trailing zeros dropped down to cents: `$0.0123`, `$1.50`. */
export const usd = (amount: number) => `$${amount.toFixed(6).replace(/(\.\d{2}\d*?)0+$/, '$1')}`;

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section>
      <header class="section-head">
        <h2>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  );
}

/** A button that runs an API action, shows it is busy, and shows the API's error if it fails. */
export function Action({ label, run, kind, confirm }: { label: string; run: () => Promise<unknown>; kind?: 'primary' | 'danger'; confirm?: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  return (
    <span class="action">
      <button
        class={kind}
        disabled={busy}
        onClick={async () => {
          if (confirm && !window.confirm(confirm)) return;
          setBusy(true);
          setError(null);
          try {
            await run();
          } catch (e) {
            setError(e);
          } finally {
            setBusy(false);
          }
        }}
      >
        {label}
      </button>
      <ErrorNote error={error} />
    </span>
  );
}

export const Json = ({ value }: { value: unknown }) => <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
