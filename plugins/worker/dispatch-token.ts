import Boom from '@hapi/boom';
import type { JWTPayload } from 'jose';
import type { SigningKeys } from '../../core/auth/signing-keys.ts';

const TYP = 'worker_dispatch';
const AUDIENCE = 'svc-worker';
/** Long enough for one call, short enough that a leaked token is worth little. */
const TTL_SECONDS = 60;
/** The subject of tokens that only ask a worker for its capacity. */
export const CAPACITY_SUBJECT = 'capacity';
const BEARER = /^Bearer +(\S+)$/i;

function unauthorized(message: string): Boom.Boom {
  const err = Boom.unauthorized(message);
  err.output.headers['WWW-Authenticate'] = 'Bearer';
  return err;
}

/**
 * The tokens an orchestrator shows a remote worker: signed with the platform's own keys (the worker
 * shares the database, so it verifies them with the same published keys), typ `worker_dispatch`,
 * audience `svc-worker`, a minute long, and bound to one attempt (its id is the subject) or to the
 * capacity question. The API refuses them (their typ is no principal), and the worker refuses
 * everything else.
 */
export class DispatchTokens {
  constructor(private readonly keys: SigningKeys) {}

  async sign(subject: string): Promise<string> {
    return (await this.keys.sign({ typ: TYP, aud: AUDIENCE }, subject, TTL_SECONDS)).token;
  }

  /** 401 without a valid platform token, 403 for one that is not a dispatch token for `subject`. */
  async verify(authorization: string | undefined, subject: string): Promise<void> {
    if (!authorization) throw unauthorized('missing bearer token');
    const match = BEARER.exec(authorization.trim());
    if (!match) throw unauthorized('malformed authorization header: expected Bearer <token>');
    let payload: JWTPayload;
    try {
      payload = await this.keys.verify(match[1]);
    } catch {
      throw unauthorized('invalid or expired token');
    }
    if (payload.typ !== TYP || payload.aud !== AUDIENCE) throw Boom.forbidden("only an orchestrator's worker dispatch token may call the worker");
    if (payload.sub !== subject) throw Boom.forbidden(`this dispatch token is for ${payload.sub}, not ${subject}`);
  }
}
