import Boom from '@hapi/boom';
import type { Logger } from 'pino';
import type { Db } from '../../core/db/knex.ts';
import { HostApiError } from '../../core/ports/integrations.ts';
import type { VcsHost } from '../../core/ports/vcshost.ts';
import { SshKeyError, parsePublicKey } from '../../domain/signatures/ssh.ts';
import type { UserKeys } from './keys.ts';

/**
 * The public SSH keys the code host lists for an invite's `code_host_user`, as canonical OpenSSH
 * lines (keys svc cannot read are left out). 422 for a user the host does not know or one without
 * keys; 502 when the host refuses or does not answer.
 */
export async function codeHostKeys(host: VcsHost, login: string): Promise<string[]> {
  if (!host.userKeys) throw Boom.badData(`the code host (${host.name}) cannot list a user's keys: "code_host_user" needs one that can`);
  let lines: string[] | null;
  try {
    lines = await host.userKeys(login);
  } catch (e) {
    if (e instanceof HostApiError) throw Boom.badGateway(`the code host did not list the keys of ${login}: ${e.message}`);
    throw e;
  }
  if (lines === null) throw Boom.badData(`"code_host_user" ${login} is not a user of the code host`);
  const keys = [...new Set(lines.flatMap(canonical))];
  if (keys.length === 0) throw Boom.badData(`"code_host_user" ${login} has no public SSH keys on the code host`);
  return keys;
}

function canonical(line: string): string[] {
  try {
    return [parsePublicKey(line).openssh];
  } catch (e) {
    if (e instanceof SshKeyError) return [];
    throw e;
  }
}

/**
 * Registers an accepted invite's code-host keys to its user. A key already registered to another
 * account stays theirs (logged, never moved); one already the user's is kept as is.
 */
export async function registerCodeHostKeys(
  d: { keys: UserKeys; logger: Logger },
  invite: { id: string; code_host_user: string | null; code_host_keys: string[] | null },
  userId: string,
  trx: Db,
): Promise<void> {
  for (const line of invite.code_host_keys ?? []) {
    const key = parsePublicKey(line);
    const owner: { user_id: string } | undefined = await trx('user_keys').where({ fingerprint: key.fingerprint }).first('user_id');
    if (owner && owner.user_id !== userId) {
      d.logger.warn({ invite: invite.id, fingerprint: key.fingerprint }, 'code-host key of an invite is registered to another account; left there');
      continue;
    }
    if (!owner) await d.keys.add(userId, line, `code host: ${invite.code_host_user}`, trx);
  }
}
