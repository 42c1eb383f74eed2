import { intFlag, parseCommand } from '../args.ts';
import type { Schemas } from '../../client/index.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { printDone, printList, printObject } from '../output.ts';

export const INVITE_USAGE = `usage: svc invite <command> [flags]

  create [--role owner|admin|member] [--email E] [--identity-hint KEY|FINGERPRINT] [--provider-hint H]
         [--expires-in-days N] [--redirect-url URL]
                          invite to --org (default role: member); prints the single-use code once.
                          No e-mail is sent: pass the code on. An --email invite also applies when
                          that account signs in; an --identity-hint one when that key first logs in
  list [--limit N] [--offset N]   the org's invites (codes are never shown again)
  revoke INVITE_ID                revoke a pending invite
  accept CODE                     join the invite's org with your account

The org is --org, else the profile's org (svc config set org ID).

Examples:
  svc invite create --role member --email new@example.com
  svc invite accept CODE`;

const INVITE_FIELDS = ['id', 'org_id', 'role', 'status', 'email', 'identity_hint', 'provider_hint', 'redirect_url', 'expires_at', 'created_at'];

function orgOf(ctx: Context): string {
  if (!ctx.org) throw new UsageError('missing org (pass --org ID or `svc config set org ID`)', INVITE_USAGE);
  return ctx.org;
}

export async function runInvite(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'create': {
      const options = {
        role: { type: 'string' },
        email: { type: 'string' },
        'identity-hint': { type: 'string' },
        'provider-hint': { type: 'string' },
        'expires-in-days': { type: 'string' },
        'redirect-url': { type: 'string' },
      } as const;
      const { values } = parseCommand(rest, options, INVITE_USAGE, { min: 0, max: 0 });
      const body = {
        org_id: orgOf(ctx),
        role: values.role as Schemas['InviteRequest']['role'],
        email: values.email,
        identity_hint: values['identity-hint'],
        provider_hint: values['provider-hint'],
        expires_in_days: intFlag(values['expires-in-days'], 'expires-in-days', INVITE_USAGE),
        redirect_url: values['redirect-url'],
      };
      printObject(ctx, await api(ctx).POST('/auth/invites', { body }), ['code', ...INVITE_FIELDS]);
      return 0;
    }
    case 'list': {
      const options = { limit: { type: 'string' }, offset: { type: 'string' } } as const;
      const { values } = parseCommand(rest, options, INVITE_USAGE, { min: 0, max: 0 });
      const query = { limit: intFlag(values.limit, 'limit', INVITE_USAGE), offset: intFlag(values.offset, 'offset', INVITE_USAGE) };
      const body = await api(ctx).GET('/orgs/{org_id}/invites', { params: { org_id: orgOf(ctx) }, query });
      printList(ctx, body, [{ key: 'id' }, { key: 'role' }, { key: 'status' }, { key: 'email' }, { key: 'expires_at', header: 'EXPIRES' }], 'invites');
      return 0;
    }
    case 'revoke': {
      const { positionals } = parseCommand(rest, {}, INVITE_USAGE, { min: 1, max: 1 });
      await api(ctx).DELETE('/orgs/{org_id}/invites/{invite_id}', { params: { org_id: orgOf(ctx), invite_id: positionals[0] } });
      printDone(ctx, `Revoked invite ${positionals[0]}.`);
      return 0;
    }
    case 'accept': {
      const { positionals } = parseCommand(rest, {}, INVITE_USAGE, { min: 1, max: 1 });
      const body = await api(ctx).POST('/auth/invites/{code}/accept', { params: { code: positionals[0] } });
      if (ctx.json) printObject(ctx, body);
      else printDone(ctx, `Joined org ${body.membership.org_id} as ${body.membership.role}.`);
      return 0;
    }
    case undefined:
      throw new UsageError('missing invite command', INVITE_USAGE);
    default:
      throw new UsageError(`unknown invite command "${command}"`, INVITE_USAGE);
  }
}
