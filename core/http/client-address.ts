import { BlockList, isIP } from 'node:net';
import type { Request, Server } from '@hapi/hapi';

/**
 * The client's address behind reverse proxies (`server.trusted_proxies`, docs/operations.md "TLS
 * behind a proxy"). `X-Forwarded-For` is read only when the direct peer is a trusted proxy, and then
 * from the right: each proxy appends the address it was connected from, so the rightmost address
 * that is not a trusted proxy is the one no client could choose. Hops left of it are whatever the
 * client sent and are never read. With no trusted proxies (the default) the header is never read.
 */

declare module '@hapi/hapi' {
  interface RequestApplicationState {
    /** The client's address (clientAddress), set when the request arrives. */
    clientAddress?: string;
  }
}

/** An address or a CIDR (`10.0.0.0/8`, `fd00::/8`): the form of an entry of server.trusted_proxies. */
export function parseRange(entry: string): { network: string; prefix: number | null; family: 'ipv4' | 'ipv6' } | null {
  const [network, prefixText, ...rest] = entry.trim().split('/');
  const version = isIP(network);
  if (!version || rest.length) return null;
  const family = version === 6 ? 'ipv6' : 'ipv4';
  if (prefixText === undefined) return { network, prefix: null, family };
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  return prefix <= (version === 6 ? 128 : 32) ? { network, prefix, family } : null;
}

/** The trusted proxies as a BlockList, or null when there are none. Entries are checked by the config schema. */
export function trustedProxies(entries: string[]): BlockList | null {
  if (!entries.length) return null;
  const list = new BlockList();
  for (const entry of entries) {
    const range = parseRange(entry);
    if (!range) throw new Error(`server.trusted_proxies: '${entry}' is not an address or a CIDR`);
    if (range.prefix === null) list.addAddress(range.network, range.family);
    else list.addSubnet(range.network, range.prefix, range.family);
  }
  return list;
}

/** `::ffff:10.0.0.1` is 10.0.0.1. */
const plain = (address: string) => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');

/** One hop of X-Forwarded-For as an address (`[::1]:443` and `10.0.0.1:80` lose their ports), or null. */
function hopAddress(hop: string): string | null {
  let text = hop.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) text = bracketed[1];
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(text)) text = text.slice(0, text.lastIndexOf(':'));
  return isIP(text) ? plain(text) : null;
}

const isTrusted = (trusted: BlockList, address: string) => trusted.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');

/**
 * The client's address: the direct peer, unless the peer is a trusted proxy; then the rightmost
 * X-Forwarded-For hop that is not a trusted proxy (the leftmost when all are; the nearest trusted
 * one when a hop is not an address, since a hop past it cannot be told from one the client wrote).
 */
export function clientAddress(peer: string, forwardedFor: string | string[] | undefined, trusted: BlockList | null): string {
  let client = plain(peer);
  if (!trusted || forwardedFor === undefined || !isIP(client)) return client;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  for (let i = hops.length - 1; i >= 0 && isTrusted(trusted, client); i--) {
    const hop = hopAddress(hops[i]);
    if (!hop) break;
    client = hop;
  }
  return client;
}

/** Works out each request's client address when it arrives (request.app.clientAddress). */
export function installClientAddress(server: Server, entries: string[]): void {
  const trusted = trustedProxies(entries);
  server.ext('onRequest', (request, h) => {
    request.app.clientAddress = clientAddress(request.info.remoteAddress, request.headers['x-forwarded-for'] as string | string[] | undefined, trusted);
    return h.continue;
  });
}

/** The request's client address (clientAddress); the direct peer when it was not worked out. */
export const clientAddressOf = (request: Request): string => request.app.clientAddress ?? plain(request.info.remoteAddress);
