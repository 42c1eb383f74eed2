import { useEffect, useState } from 'preact/hooks';
import { svc, type Schemas } from './api.ts';
import { navigate } from './router.ts';
import { ErrorNote } from './ui.tsx';

interface AuthConfig {
  identity_provider_url: string | null;
  sso: { enabled: boolean };
}

/**
 * Sign-in: a login link's code (from `svc console`, in the URL fragment so no server logs it), a
 * pasted token, or an identity-provider token through /auth/exchange. Each becomes the HttpOnly
 * session cookie; the page never keeps a token.
 */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const [token, setToken] = useState('');
  const [idToken, setIdToken] = useState('');
  const [config, setConfig] = useState<AuthConfig | null>(null);
  const [busy, setBusy] = useState(false);

  const open = async (body: Schemas['ConsoleSessionRequest']) => {
    setBusy(true);
    setError(null);
    try {
      await svc.POST('/auth/console/session', { body });
      onSignedIn();
      navigate(location.pathname.startsWith('/console/login') ? '/' : location.pathname, true);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    void svc.GET('/auth/config').then(setConfig, () => undefined);
    const code = new URLSearchParams(location.hash.slice(1)).get('code');
    if (code) {
      history.replaceState(null, '', location.pathname); // the code works once; keep it out of history
      void open({ code });
    }
  }, []);

  const exchange = async () => {
    setError(null);
    try {
      const issued = await svc.POST('/auth/exchange', { body: { token: idToken.trim() } });
      await open({ token: issued.access_token });
    } catch (e) {
      setError(e);
    }
  };

  return (
    <main class="signin">
      <h1>svc console</h1>
      <p>
        Run <code>svc console</code> to open this page signed in, or paste a token.
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void open({ token: token.trim() });
        }}
      >
        <label for="token">Token</label>
        <input id="token" type="password" autocomplete="off" value={token} onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
        <button class="primary" type="submit" disabled={busy || !token.trim()}>
          Sign in
        </button>
      </form>
      {config?.sso.enabled && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void exchange();
          }}
        >
          <h2>Single sign-on</h2>
          {config.identity_provider_url && (
            <p>
              Sign in at <a href={config.identity_provider_url}>your identity provider</a>, then paste the identity token it gives you.
            </p>
          )}
          <label for="idtoken">Identity token</label>
          <input id="idtoken" type="password" autocomplete="off" value={idToken} onInput={(e) => setIdToken((e.target as HTMLInputElement).value)} />
          <button type="submit" disabled={busy || !idToken.trim()}>
            Exchange and sign in
          </button>
        </form>
      )}
      <ErrorNote error={error} />
    </main>
  );
}
