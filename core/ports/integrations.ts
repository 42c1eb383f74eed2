/** What the code-host and chat-app ports share: the inbound request, the event it becomes, API errors. */

/** A webhook request as the provider sent it: header names lower-case, the body byte for byte (signatures cover the raw bytes). */
export interface InboundRequest {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** What a delivery becomes on the event spine; the project and the source are the receiver's to add. */
export interface InboundEvent {
  type: string;
  payload: Record<string, unknown>;
  ref_sha: string | null;
  ref_branch: string | null;
  actor_type: 'user' | 'app' | null;
  actor_id: string | null;
  /** Built from the provider's delivery or event id, so a redelivery is recognised. */
  dedupe_key: string | null;
}

export type Verification = { ok: true } | { ok: false; reason: string };

/** A provider API call that did not succeed: the provider's HTTP status (0 when it never answered) and its message. */
export class HostApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'HostApiError';
  }
}

/** One header's value; a repeated header is ambiguous and counts as absent. */
export function headerOf(request: InboundRequest, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return typeof value === 'string' ? value : undefined;
}
