import { intFlag, parseCommand, requireFlag } from '../args.ts';
import type { Schemas } from '../../client/index.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api, publicApi } from '../http.ts';
import { printList, printObject } from '../output.ts';
import { readPublicKey } from '../ssh.ts';

export const ACCESS_REQUEST_USAGE = `usage: svc access-request <command> [flags]

  create --email E (--key PATH.pub | --nostr-pubkey HEX) [--message M]
                             ask to join --org (no login needed); prints the request id
  status REQUEST_ID          pending, approved or rejected (with the reason); no login needed
  list [--status pending|approved|rejected] [--limit N] [--offset N]   the org's requests (admins)
  approve REQUEST_ID [--role owner|admin|member]   create the account, register the key, add the member
  reject REQUEST_ID --reason R

The org is --org, else the profile's org (svc config set org ID).

Examples:
  svc access-request create --org ORG_ID --email me@example.com --key ~/.ssh/id_ed25519.pub
  svc access-request approve REQUEST_ID --role member`;

const REQUEST_FIELDS = [
  'id',
  'org_id',
  'email',
  'status',
  'key_type',
  'ssh_fingerprint',
  'nostr_pubkey',
  'role',
  'reason',
  'user_id',
  'decided_at',
  'created_at',
];

function orgOf(ctx: Context): string {
  if (!ctx.org) throw new UsageError('missing org (pass --org ID or `svc config set org ID`)', ACCESS_REQUEST_USAGE);
  return ctx.org;
}

export async function runAccessRequest(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const show = (body: unknown) => printObject(ctx, body, REQUEST_FIELDS);
  switch (command) {
    case 'create': {
      const options = { email: { type: 'string' }, key: { type: 'string' }, 'nostr-pubkey': { type: 'string' }, message: { type: 'string' } } as const;
      const { values } = parseCommand(rest, options, ACCESS_REQUEST_USAGE, { min: 0, max: 0 });
      if (Boolean(values.key) === Boolean(values['nostr-pubkey'])) throw new UsageError('pass exactly one of --key and --nostr-pubkey', ACCESS_REQUEST_USAGE);
      const body = {
        org_id: orgOf(ctx),
        email: requireFlag(values.email, 'email', ACCESS_REQUEST_USAGE),
        ssh_public_key: values.key ? await readPublicKey(values.key) : undefined,
        nostr_pubkey: values['nostr-pubkey'],
        message: values.message,
      };
      show(await publicApi(ctx).POST('/auth/request-access', { body }));
      return 0;
    }
    case 'status': {
      const { positionals } = parseCommand(rest, {}, ACCESS_REQUEST_USAGE, { min: 1, max: 1 });
      printObject(ctx, await publicApi(ctx).GET('/auth/request-access/{request_id}', { params: { request_id: positionals[0] } }));
      return 0;
    }
    case 'list': {
      const options = { status: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values } = parseCommand(rest, options, ACCESS_REQUEST_USAGE, { min: 0, max: 0 });
      const query = {
        status: values.status,
        limit: intFlag(values.limit, 'limit', ACCESS_REQUEST_USAGE),
        offset: intFlag(values.offset, 'offset', ACCESS_REQUEST_USAGE),
      };
      const body = await api(ctx).GET('/orgs/{org_id}/access-requests', { params: { org_id: orgOf(ctx) }, query });
      printList(
        ctx,
        body,
        [{ key: 'id' }, { key: 'email' }, { key: 'status' }, { key: 'key_type', header: 'KEY' }, { key: 'created_at', header: 'CREATED' }],
        'access requests',
      );
      return 0;
    }
    case 'approve': {
      const { values, positionals } = parseCommand(rest, { role: { type: 'string' } }, ACCESS_REQUEST_USAGE, { min: 1, max: 1 });
      show(
        await api(ctx).POST('/orgs/{org_id}/access-requests/{request_id}/approve', {
          params: { org_id: orgOf(ctx), request_id: positionals[0] },
          body: { role: values.role as NonNullable<Schemas['AccessRequestApprove']>['role'] },
        }),
      );
      return 0;
    }
    case 'reject': {
      const { values, positionals } = parseCommand(rest, { reason: { type: 'string' } }, ACCESS_REQUEST_USAGE, { min: 1, max: 1 });
      show(
        await api(ctx).POST('/orgs/{org_id}/access-requests/{request_id}/reject', {
          params: { org_id: orgOf(ctx), request_id: positionals[0] },
          body: { reason: requireFlag(values.reason, 'reason', ACCESS_REQUEST_USAGE) },
        }),
      );
      return 0;
    }
    case undefined:
      throw new UsageError('missing access-request command', ACCESS_REQUEST_USAGE);
    default:
      throw new UsageError(`unknown access-request command "${command}"`, ACCESS_REQUEST_USAGE);
  }
}
