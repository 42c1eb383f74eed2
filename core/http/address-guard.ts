import { lookup as dnsLookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';

/** A delivery URL that must not be called (server-side request forgery guard). */
export class UrlRefused extends Error {}

type Family = 'ipv4' | 'ipv6';
type Range = [network: string, prefix: number, family: Family];

/** Never reachable from a delivery, unless allowed_hosts names them: link-local, metadata, unspecified, multicast, reserved. */
const FORBIDDEN: [Range, string][] = [
  [['0.0.0.0', 8, 'ipv4'], 'an unspecified address'],
  [['169.254.0.0', 16, 'ipv4'], 'a link-local (cloud metadata) address'],
  [['100.100.100.200', 32, 'ipv4'], 'a cloud metadata address'],
  [['192.0.0.0', 24, 'ipv4'], 'an IETF protocol address'],
  [['224.0.0.0', 4, 'ipv4'], 'a multicast address'],
  [['240.0.0.0', 4, 'ipv4'], 'a reserved address'],
  [['::', 128, 'ipv6'], 'an unspecified address'],
  [['fe80::', 10, 'ipv6'], 'a link-local address'],
  [['fd00:ec2::254', 128, 'ipv6'], 'a cloud metadata address'],
  [['ff00::', 8, 'ipv6'], 'a multicast address'],
];
const LOOPBACK: Range[] = [
  ['127.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
];
const PRIVATE: Range[] = [
  ['10.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['fc00::', 7, 'ipv6'],
];

const familyOf = (address: string): Family => (isIP(address) === 6 ? 'ipv6' : 'ipv4');

function blockList(ranges: Range[], addresses: string[] = []): BlockList {
  const list = new BlockList();
  for (const [network, prefix, family] of ranges) list.addSubnet(network, prefix, family);
  for (const address of addresses) list.addAddress(address, familyOf(address));
  return list;
}

/** This host's own interface addresses: reaching them is reaching the service itself. */
function ownAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address.replace(/%.*$/, '')));
}

export interface GuardOptions {
  allowLoopback: boolean;
  allowPrivate: boolean;
  /** Host names (exact, case-insensitive), addresses or CIDRs exempt from every check. */
  allowedHosts: string[];
}

/**
 * Which addresses a delivery may reach. Checked when a subscription is created (the URL's host
 * resolved) and on every connection (the resolver the HTTP client uses), so a name that later
 * resolves elsewhere is refused too. A name with any refused address is refused.
 */
export class AddressGuard {
  private readonly forbidden: [BlockList, string][];
  private readonly self: BlockList;
  private readonly private_: BlockList;
  private readonly allowedNames = new Set<string>();
  private readonly allowedRanges = new BlockList();

  constructor(private readonly options: GuardOptions) {
    this.forbidden = FORBIDDEN.map(([range, why]) => [blockList([range]), why]);
    this.self = blockList(LOOPBACK, ownAddresses());
    this.private_ = blockList(PRIVATE);
    for (const entry of options.allowedHosts) {
      const [address, prefix] = entry.split('/');
      if (isIP(address)) this.allowedRanges.addSubnet(address, prefix === undefined ? (isIP(address) === 6 ? 128 : 32) : Number(prefix), familyOf(address));
      else this.allowedNames.add(entry.toLowerCase());
    }
  }

  /** Why a delivery may not reach `address`, or null when it may. */
  refusal(address: string): string | null {
    const family = familyOf(address);
    if (this.allowedRanges.check(address, family)) return null;
    for (const [list, why] of this.forbidden) if (list.check(address, family)) return why;
    if (!this.options.allowLoopback && this.self.check(address, family)) return "this service's own address";
    if (!this.options.allowPrivate && this.private_.check(address, family)) return 'a private address';
    return null;
  }

  /** Resolves the URL's host and refuses it when any of its addresses is refused. */
  async check(url: URL): Promise<void> {
    const host = hostOf(url);
    if (this.allowedNames.has(host.toLowerCase())) return;
    const addresses = isIP(host) ? [host] : await resolveAll(host);
    for (const address of addresses) this.refuse(host, address);
  }

  /** A resolver for the HTTP client: the same rule on every connection it opens. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    resolveAll(hostname)
      .then((addresses) => {
        if (!this.allowedNames.has(hostname.toLowerCase())) for (const address of addresses) this.refuse(hostname, address);
        const entries = addresses.map((address) => ({ address, family: isIP(address) }));
        if (options.all) callback(null, entries as never);
        else callback(null, entries[0].address, entries[0].family);
      })
      .catch((err: Error) => callback(err as NodeJS.ErrnoException, '', 0));
  };

  private refuse(host: string, address: string): void {
    const why = this.refusal(address);
    if (why !== null) throw new UrlRefused(host === address ? `${address} is ${why}` : `${host} resolves to ${address}, ${why}`);
  }
}

/** The URL's host without the brackets of an IPv6 literal. */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

function resolveAll(host: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true }, (err, addresses) => {
      if (err) reject(new UrlRefused(`${host} does not resolve (${err.code ?? err.message})`));
      else resolve(addresses.map((a) => a.address));
    });
  });
}
