import { intFlag, parseCommand, requireFlag } from '../args.ts';
import { credentialsPath, removeCredential, saveCredential, type Context } from '../config.ts';
import { ApiError, CliError, UsageError } from '../errors.ts';
import type { Schemas } from '../../client/index.ts';
import { api, publicApi } from '../http.ts';
import { formatFields, formatTable, note, printDone, printJson, printList, printObject, write } from '../output.ts';
import { defaultPrivateKey, defaultPublicKey, DEFAULT_PRIVATE_KEYS, readPublicKey, signMessage } from '../ssh.ts';
import { answerChallenge, nostrPublicKey, readSecretKey } from '../nostr.ts';

export const AUTH_USAGE = `usage: svc auth <command> [flags]

  status                         bootstrap status of the server (no login needed)
  bootstrap --email E [--token T] [--key PATH.pub] [--name NAME] [--ttl-days N]
                                 create the first admin; registers --key (default ~/.ssh/id_ed25519.pub
                                 if present) and stores the returned token. --token falls back to
                                 SVC_BOOTSTRAP_TOKEN
  login --email E [--key PRIVATE_KEY] [--ttl-days N]
                                 sign a server challenge with ssh-keygen and store the token
                                 (default key: first of ~/.ssh/${DEFAULT_PRIVATE_KEYS.join(', ')})
  login --nostr --key-file F [--email E] [--ttl-days N]
                                 Schnorr login with the hex secret key in F (mode 0600); without
                                 --email the challenge is for the key itself
  logout                         forget the stored token for this API URL
  whoami                         the current user, token, orgs and projects
  keys list                      your registered SSH public keys
  keys add PATH.pub [--label L]  register an SSH public key
  keys add --nostr HEX [--label L]
                                 register a hex Nostr public key
  keys list --nostr              your registered Nostr public keys
  keys remove KEY_ID             remove an SSH public key
  mint --email E (--org ID | --project ID) [--role R] [--ttl-days N] [--key PATH.pub]
                                 mint a scoped token for a user (system admins); prints it, does not store it

Examples:
  svc auth bootstrap --email admin@example.com          (first start, on the server host)
  svc auth login --email me@example.com
  svc auth whoami`;

interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_at: string | null;
  user: { id: string; email: string; display_name?: string | null; is_admin?: boolean };
  scope?: unknown;
  role?: string;
}

const KEY_COLUMNS = [{ key: 'id' }, { key: 'type' }, { key: 'fingerprint' }, { key: 'label' }, { key: 'created_at', header: 'CREATED' }];

export async function runAuth(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'status':
      parseCommand(rest, {}, AUTH_USAGE, { min: 0, max: 0 });
      printObject(ctx, await publicApi(ctx).GET('/auth/bootstrap/status'));
      return 0;
    case 'bootstrap':
      return bootstrap(ctx, rest);
    case 'login':
      return login(ctx, rest);
    case 'logout':
      return logout(ctx, rest);
    case 'whoami':
      return whoami(ctx, rest);
    case 'keys':
      return keys(ctx, rest);
    case 'mint':
      return mint(ctx, rest);
    case undefined:
      throw new UsageError('missing auth command', AUTH_USAGE);
    default:
      throw new UsageError(`unknown auth command "${command}"`, AUTH_USAGE);
  }
}

const ttlDays = (value: string | undefined): number | undefined => {
  const days = intFlag(value, 'ttl-days', AUTH_USAGE);
  if (days === 0) throw new UsageError('--ttl-days must be at least 1', AUTH_USAGE);
  return days;
};

/** Store a login's token under the API URL and say so. */
function storeToken(ctx: Context, response: TokenResponse, verb: string): void {
  saveCredential(ctx.home, ctx.apiUrl, {
    access_token: response.access_token,
    expires_at: response.expires_at ?? null,
    email: response.user?.email ?? null,
  });
  if (ctx.json) return printJson(response);
  const expiry = response.expires_at ? ` until ${response.expires_at}` : '';
  write(`${verb} as ${response.user?.email} on ${ctx.apiUrl}${expiry}.`);
  note(`Token saved to ${credentialsPath(ctx.home)}.`);
  if (ctx.tokenSource === 'env') note('Note: SVC_TOKEN is set and overrides the stored token.');
}

async function bootstrap(ctx: Context, args: string[]): Promise<number> {
  const options = {
    email: { type: 'string' },
    token: { type: 'string' },
    key: { type: 'string' },
    name: { type: 'string' },
    'ttl-days': { type: 'string' },
  } as const;
  const { values } = parseCommand(args, options, AUTH_USAGE, { min: 0, max: 0 });
  const email = requireFlag(values.email, 'email', AUTH_USAGE);
  const keyPath = values.key ?? defaultPublicKey(ctx.home);
  const body = {
    email,
    token: values.token ?? (ctx.env.SVC_BOOTSTRAP_TOKEN || undefined),
    public_key: keyPath ? await readPublicKey(keyPath) : undefined,
    display_name: values.name,
    ttl_days: ttlDays(values['ttl-days']),
  };
  const response = await publicApi(ctx).POST('/auth/bootstrap', { body });
  if (keyPath && !ctx.json) note(`Registered SSH key ${keyPath}.`);
  storeToken(ctx, response, 'Bootstrapped admin; logged in');
  return 0;
}

const hasFlag = (args: string[], name: string): boolean => args.some((a) => a === `--${name}` || a.startsWith(`--${name}=`));

/** `login --nostr`: sign the challenge nonce as a kind-22242 event with the key in --key-file. */
async function nostrLogin(ctx: Context, args: string[]): Promise<number> {
  const options = { nostr: { type: 'boolean' }, 'key-file': { type: 'string' }, email: { type: 'string' }, 'ttl-days': { type: 'string' } } as const;
  const { values } = parseCommand(args, options, AUTH_USAGE, { min: 0, max: 0 });
  const secret = await readSecretKey(requireFlag(values['key-file'], 'key-file', AUTH_USAGE));
  const ttl_days = ttlDays(values['ttl-days']);
  const subject = values.email ? { email: values.email } : { pubkey: nostrPublicKey(secret) };
  const challenge = await publicApi(ctx).POST('/auth/nostr/challenge', { body: subject });
  const response = await publicApi(ctx).POST('/auth/nostr/verify', { body: answerChallenge(secret, challenge, ttl_days) });
  storeToken(ctx, response, 'Logged in');
  return 0;
}

async function login(ctx: Context, args: string[]): Promise<number> {
  if (hasFlag(args, 'nostr')) return nostrLogin(ctx, args);
  const options = { email: { type: 'string' }, key: { type: 'string' }, 'ttl-days': { type: 'string' } } as const;
  const { values } = parseCommand(args, options, AUTH_USAGE, { min: 0, max: 0 });
  const email = requireFlag(values.email, 'email', AUTH_USAGE);
  const ttl_days = ttlDays(values['ttl-days']);
  const keyPath = values.key ?? defaultPrivateKey(ctx.home);
  if (!keyPath) {
    const tried = DEFAULT_PRIVATE_KEYS.map((name) => `~/.ssh/${name}`).join(', ');
    throw new CliError(`no SSH private key found (looked for ${tried}); pass --key PATH`);
  }
  const challenge = await publicApi(ctx).POST('/auth/challenge', { body: { email } });
  const signature = await signMessage(keyPath, challenge.namespace, challenge.nonce, ctx.env);
  const response = await publicApi(ctx)
    .POST('/auth/verify', { body: { challenge_id: challenge.challenge_id, signature, ttl_days } })
    .catch((error: unknown) => {
      if (!(error instanceof ApiError) || error.statusCode !== 401) throw error;
      const pub = `${keyPath}.pub`;
      throw new ApiError(
        error.statusCode,
        error.message,
        error.body,
        `to register this key: logged in elsewhere, run \`svc auth keys add ${pub}\`; else an admin runs ` +
          `\`svc auth mint --email ${email} --org ORG_ID --key ${pub}\`, or ask for access with \`svc access-request --help\``,
      );
    });
  storeToken(ctx, response, 'Logged in');
  return 0;
}

function logout(ctx: Context, args: string[]): number {
  parseCommand(args, {}, AUTH_USAGE, { min: 0, max: 0 });
  const removed = removeCredential(ctx.home, ctx.apiUrl);
  if (!ctx.json) write(removed ? `Logged out of ${ctx.apiUrl}.` : `No stored credentials for ${ctx.apiUrl}.`);
  if (ctx.tokenSource === 'env') note('Note: SVC_TOKEN is still set in the environment.');
  return 0;
}

async function whoami(ctx: Context, args: string[]): Promise<number> {
  parseCommand(args, {}, AUTH_USAGE, { min: 0, max: 0 });
  const me = await api(ctx).GET('/auth/me');
  if (ctx.json) {
    printJson(me);
    return 0;
  }
  const token = me.token ?? {};
  write(
    formatFields([
      ['email', me.user?.email],
      ['display_name', me.user?.display_name],
      ['user_id', me.user?.id],
      ['is_admin', me.user?.is_admin],
      ['api_url', ctx.apiUrl],
      ['token_expires_at', token.expires_at],
      ['token_scope', token.scope],
      ['token_role', token.role],
    ]),
  );
  const sections: [string, Record<string, unknown>[] | undefined, string[]][] = [
    ['Orgs', me.orgs, ['id', 'name', 'slug', 'role']],
    ['Projects', me.projects, ['id', 'name', 'slug', 'org_id', 'role']],
  ];
  for (const [title, rows, keys] of sections) {
    const table = rows?.length
      ? formatTable(
          rows,
          keys.map((key) => ({ key })),
        )
      : '(none)';
    write(`\n${title}:\n${table}`);
  }
  return 0;
}

const NOSTR_KEY_COLUMNS = [{ key: 'id' }, { key: 'pubkey' }, { key: 'label' }, { key: 'created_at', header: 'CREATED' }];

async function nostrKeys(ctx: Context, command: string, args: string[]): Promise<number> {
  if (command === 'add') {
    const { values } = parseCommand(args, { nostr: { type: 'string' }, label: { type: 'string' } }, AUTH_USAGE, { min: 0, max: 0 });
    const body = { public_key: requireFlag(values.nostr, 'nostr', AUTH_USAGE), label: values.label };
    printObject(ctx, await api(ctx).POST('/auth/nostr-keys', { body }));
    return 0;
  }
  const options = { nostr: { type: 'boolean' }, limit: { type: 'string' }, offset: { type: 'string' } } as const;
  const { values } = parseCommand(args, options, AUTH_USAGE, { min: 0, max: 0 });
  const query = { limit: intFlag(values.limit, 'limit', AUTH_USAGE), offset: intFlag(values.offset, 'offset', AUTH_USAGE) };
  printList(ctx, await api(ctx).GET('/auth/nostr-keys', { query }), NOSTR_KEY_COLUMNS, 'keys');
  return 0;
}

async function keys(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  if ((command === 'add' || command === 'list') && hasFlag(rest, 'nostr')) return nostrKeys(ctx, command, rest);
  if (command === 'list') {
    const { values } = parseCommand(rest, { limit: { type: 'string' }, offset: { type: 'string' } }, AUTH_USAGE, { min: 0, max: 0 });
    const query = { limit: intFlag(values.limit, 'limit', AUTH_USAGE), offset: intFlag(values.offset, 'offset', AUTH_USAGE) };
    printList(ctx, await api(ctx).GET('/auth/keys', { query }), KEY_COLUMNS, 'keys');
    return 0;
  }
  if (command === 'add') {
    const { values, positionals } = parseCommand(rest, { label: { type: 'string' } }, AUTH_USAGE, { min: 1, max: 1 });
    const body = { public_key: await readPublicKey(positionals[0]), label: values.label };
    printObject(ctx, await api(ctx).POST('/auth/keys', { body }));
    return 0;
  }
  if (command === 'remove') {
    const { positionals } = parseCommand(rest, {}, AUTH_USAGE, { min: 1, max: 1 });
    await api(ctx).DELETE('/auth/keys/{key_id}', { params: { key_id: positionals[0] } });
    printDone(ctx, `Removed key ${positionals[0]}.`);
    return 0;
  }
  throw new UsageError(command ? `unknown keys command "${command}"` : 'missing keys command (list, add, remove)', AUTH_USAGE);
}

async function mint(ctx: Context, args: string[]): Promise<number> {
  const options = { email: { type: 'string' }, role: { type: 'string' }, 'ttl-days': { type: 'string' }, key: { type: 'string' } } as const;
  const { values } = parseCommand(args, options, AUTH_USAGE, { min: 0, max: 0 });
  const email = requireFlag(values.email, 'email', AUTH_USAGE);
  // Only explicit flags: a profile's default org must not silently scope a minted token.
  const { org, project } = ctx.flags;
  if (Boolean(org) === Boolean(project)) throw new UsageError('give exactly one of --org ID or --project ID', AUTH_USAGE);
  const public_key = values.key === undefined ? undefined : await readPublicKey(values.key);
  const body = {
    email,
    org_id: org,
    project_id: project,
    role: values.role as Schemas['MintRequest']['role'],
    ttl_days: ttlDays(values['ttl-days']),
    public_key,
  };
  const response = await api(ctx).POST('/auth/mint', { body });
  if (ctx.json) {
    printJson(response);
    return 0;
  }
  write(response.access_token);
  const scope = org ? `org ${org}` : `project ${project}`;
  const expiry = response.expires_at ? `, expires ${response.expires_at}` : '';
  note(`Minted a ${response.role ?? 'scoped'} token for ${response.user?.email ?? email} on ${scope}${expiry} (not stored).`);
  return 0;
}
