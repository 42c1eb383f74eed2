import type { Request } from '@hapi/hapi';
import { clientAddressOf } from './client-address.ts';

/** Where a request came from, as far as this server can tell. */
export interface Client {
  /** The client's address: the direct peer's, or the one a trusted proxy forwarded (server.trusted_proxies). */
  remoteAddress: string;
  /** The request carries a proxy's forwarding header: whoever sent it may be anywhere (trusted proxy or not, never a local client). */
  forwarded: boolean;
}

export function clientOf(request: Request): Client {
  const forwarded = ['forwarded', 'x-forwarded-for', 'x-real-ip'].some((name) => name in request.headers);
  return { remoteAddress: clientAddressOf(request), forwarded };
}

/** A client on this host: a loopback address that no proxy forwarded (a proxy on this host would make everyone local). */
export function isLocalClient(client: Client): boolean {
  if (client.forwarded) return false;
  const address = client.remoteAddress.replace(/^::ffff:/, '');
  return address === '::1' || /^127\.\d+\.\d+\.\d+$/.test(address);
}
