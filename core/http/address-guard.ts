import { lookup as dnsLookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';

/** A delivery URL that must not be called (server-side request forgery guard). */
export class UrlRefused extends Error {}
/** Refused because the name does not resolve here (a creation-time check may let it pass: the connection is checked again). */
export class UrlUnresolved extends UrlRefused {}

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
  /** Ports this service listens on: a URL naming one of them on this host's own addresses is refused even where loopback is allowed. */
  ownPorts?: () => number[];
}

/** The ports this process listens on (the kernel notes them once it listens). */
const listeningPorts = new Set<number>();
export function noteOwnPort(port: number): void {
  if (Number.isInteger(port) && port > 0) listeningPorts.add(port);
}

/** The `outbound` settings, and the older per-domain keys kept as aliases (`webhooks.*`, `inference.*`). */
interface OutboundKeys {
  allow_loopback?: boolean | null;
  allow_private?: boolean | null;
  allowed_hosts?: string[];
}
export interface OutboundConfigView {
  env: 'development' | 'production' | 'test';
  server: { port: number };
  outbound: OutboundKeys;
  webhooks?: OutboundKeys;
  inference?: OutboundKeys;
}

/**
 * The one address policy for every connection made on a tenant's behalf (docs/security.md,
 * "Outbound addresses"): `outbound.allow_loopback` and `outbound.allow_private` (null: allowed
 * unless env is production), `outbound.allowed_hosts`. `webhooks` and `inference` may still set
 * their own allow_* keys (the older names): set, they decide for that domain; their allowed_hosts
 * add to the shared list. In production this service's own listening ports are refused on its
 * own addresses whatever allow_loopback says.
 */
export function guardOptions(config: OutboundConfigView, section?: 'webhooks' | 'inference'): GuardOptions {
  const shared = config.outbound;
  const own = section ? config[section] : undefined;
  const production = config.env === 'production';
  return {
    allowLoopback: own?.allow_loopback ?? shared.allow_loopback ?? !production,
    allowPrivate: own?.allow_private ?? shared.allow_private ?? !production,
    allowedHosts: [...(shared.allowed_hosts ?? []), ...(own?.allowed_hosts ?? [])],
    ownPorts: production ? () => [config.server.port, ...listeningPorts].filter((p) => p > 0) : undefined,
  };
}

/** The guard of a loaded config's `outbound` policy (one per config object). */
const guards = new WeakMap<object, AddressGuard>();
export function outboundGuard(config: OutboundConfigView): AddressGuard {
  let guard = guards.get(config);
  if (!guard) guards.set(config, (guard = new AddressGuard(guardOptions(config))));
  return guard;
}

/**
 * A host as a connection would reach it: brackets dropped, lower case, and the numeric forms
 * resolvers accept for IPv4 (hex `0x0a000001`, decimal `167772161`, octal `012.0.0.1`, short
 * `10.1`) written as the dotted address they mean, by the WHATWG URL parser's IPv4 rules (the ones
 * getaddrinfo follows). For hosts that did not come through an http(s) URL: ssh and scp-like git
 * URLs, registry `host[:port]`.
 */
export function normalizeHost(host: string): string {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (isIP(bare) === 6) {
    try {
      return new URL(`http://[${bare}]/`).hostname.slice(1, -1);
    } catch {
      return bare.toLowerCase();
    }
  }
  if (!/^[\w.-]+$/.test(bare)) return bare.toLowerCase();
  try {
    return new URL(`http://${bare}/`).hostname;
  } catch {
    return bare.toLowerCase();
  }
}

/** The IPv4 address an IPv6 one carries (IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16), or null. */
function embeddedIPv4(address: string): string | null {
  if (isIP(address) !== 6) return null;
  const words = expandIPv6(address);
  if (!words) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => words.slice(from, to).every((w) => w === 0);
  if (zero(0, 6) && (words[6] !== 0 || words[7] > 1)) return v4(words[6], words[7]);
  if (words[0] === 0x64 && words[1] === 0xff9b && zero(2, 6)) return v4(words[6], words[7]);
  if (words[0] === 0x2002) return v4(words[1], words[2]);
  return null;
}

function expandIPv6(address: string): number[] | null {
  let text = address.replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number);
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const part = (s: string | undefined) => (s ? s.split(':').map((w) => parseInt(w, 16)) : []);
  const left = part(head);
  const right = part(tail);
  const fill = tail === undefined ? 0 : 8 - left.length - right.length;
  const words = [...left, ...Array<number>(Math.max(fill, 0)).fill(0), ...right];
  return words.length === 8 && words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff) ? words : null;
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
    const inner = embeddedIPv4(address);
    if (inner !== null) {
      const why = this.refusal(inner);
      if (why !== null) return `${why} (carried in ${address})`;
    }
    for (const [list, why] of this.forbidden) if (list.check(address, family)) return why;
    if (!this.options.allowLoopback && this.self.check(address, family)) return "this service's own address";
    if (!this.options.allowPrivate && this.private_.check(address, family)) return 'a private address';
    return null;
  }

  /** Resolves the URL's host and refuses it when any of its addresses is refused; the addresses checked. */
  async check(url: URL): Promise<string[]> {
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : url.protocol === 'http:' ? 80 : 0));
    return this.checkHost(hostOf(url), port || undefined);
  }

  /**
   * The same for a host (any form normalizeHost reads) and the port a connection would use: its
   * addresses when every one may be reached, else UrlRefused (UrlUnresolved when it does not resolve).
   */
  async checkHost(rawHost: string, port?: number): Promise<string[]> {
    const host = normalizeHost(rawHost);
    const addresses = isIP(host) ? [host] : await resolveAll(host);
    if (this.allowedNames.has(host)) return addresses;
    for (const address of addresses) this.refuse(host, address);
    if (port !== undefined && this.options.ownPorts?.().includes(port)) {
      const self = addresses.find((a) => this.self.check(a, familyOf(a)) && !this.allowedRanges.check(a, familyOf(a)));
      if (self !== undefined) throw new UrlRefused(`${host}:${port} is this service's own listening address`);
    }
    return addresses;
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
      if (err) reject(new UrlUnresolved(`${host} does not resolve (${err.code ?? err.message})`));
      else resolve(addresses.map((a) => a.address));
    });
  });
}
