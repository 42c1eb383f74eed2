import type { Request } from '@hapi/hapi';

/** Where a request came from, as far as this server can tell. */
export interface Client {
  remoteAddress: string;
  /** The request carries a proxy's forwarding header: whoever sent it may be anywhere. */
  forwarded: boolean;
}

export function clientOf(request: Request): Client {
  const forwarded = ['forwarded', 'x-forwarded-for', 'x-real-ip'].some((name) => name in request.headers);
  return { remoteAddress: request.info.remoteAddress, forwarded };
}

/** A client on this host: a loopback address that no proxy forwarded (a proxy on this host would make everyone local). */
export function isLocalClient(client: Client): boolean {
  if (client.forwarded) return false;
  const address = client.remoteAddress.replace(/^::ffff:/, '');
  return address === '::1' || /^127\.\d+\.\d+\.\d+$/.test(address);
}
