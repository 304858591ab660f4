/**
 * Where a webhook may be sent. A broker chooses the URL, so without these rules a webhook could
 * make this server call its own network (SSRF): the database's port, an admin page on a private
 * address, or the cloud metadata service that hands out the machine's credentials.
 *
 * The address rule holds at every connection: `checkedLookup` is each delivery's socket `lookup`,
 * so a host that later resolves to 10.0.0.1 (DNS rebinding) is refused before it connects. An
 * IP-literal host is never looked up, so `checkEndpointUrl` checks it itself.
 */
import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface DestinationPolicy {
  /**
   * Development and tests only: also `http:`, and addresses on this machine or its networks
   * (loopback, private, link-local, …). The cloud metadata addresses stay refused.
   */
  allowPrivate: boolean;
}

export type RefusalReason = 'not-a-url' | 'scheme' | 'credentials' | 'no-host' | 'authority' | 'port' | 'host-name' | 'address' | 'unresolvable';

/** A webhook URL or address this server will not send to; `reason` says which rule refused it. */
export class DestinationRefusedError extends Error {
  readonly reason: RefusalReason;
  /** The refused address (`reason: 'address'`), as it was given or resolved. */
  readonly address: string | undefined;
  constructor(reason: RefusalReason, message: string, address?: string) {
    super(message);
    this.name = 'DestinationRefusedError';
    this.reason = reason;
    this.address = address;
  }
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * What a developer whose receiver runs on their own machine can do instead, added to the refusals
 * it meets (an `http:` URL, a loopback or private address): the client's `listen` command, which
 * forwards events to a local URL, or the setting of a server they run themselves.
 */
export const LOCAL_WAY_OUT =
  'to receive webhooks on your own machine run npx client-api-v1 listen --forward-to http://localhost:4000/hooks, or on a server you run yourself set WEBHOOK_ALLOW_PRIVATE_URLS=true';

/**
 * Instance metadata and credential services, refused even with allowPrivate: reaching one from
 * a webhook hands the machine's cloud credentials to whoever reads the delivery's answer.
 */
const CLOUD_METADATA = [
  '169.254.169.254', // AWS, GCP, Azure, OpenStack, DigitalOcean, …
  'fd00:ec2::254', // AWS over IPv6
  '169.254.170.2', // AWS ECS task credentials
  '169.254.170.23', // AWS EKS Pod Identity
  'fd00:ec2::23', // AWS EKS Pod Identity over IPv6
  '100.100.100.200', // Alibaba Cloud
  '192.0.0.192', // Oracle Cloud
].map((text) => ipaddr.parse(text));

/** NAT64's well-known prefix (RFC 6052): 64:ff9b::a.b.c.d is a.b.c.d reached through a NAT64 gateway. */
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');
/** NAT64's local-use prefix (RFC 8215), read as its usual /96 deployment: the last 32 bits. */
const NAT64_LOCAL = ipaddr.parseCIDR('64:ff9b:1::/48');
/** IPv4-compatible IPv6 (RFC 4291 2.5.5.1, deprecated): ::a.b.c.d, never a public destination. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');
/** 6to4 (RFC 3056): 2002:AABB:CCDD::/48 is the site behind the IPv4 address AA.BB.CC.DD. */
const SIX_TO_FOUR = ipaddr.parseCIDR('2002::/16');
/** Teredo (RFC 4380): 2001:0:SSSS:SSSS:…:CCCC:CCCC, the server's IPv4 and the client's (inverted). */
const TEREDO = ipaddr.parseCIDR('2001::/32');

/** ipaddr.js's range names, in the words of a refusal. */
const RANGE_WORDS: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT (100.64.0.0/10)',
  private: 'private',
  uniqueLocal: 'private (unique local, fc00::/7)',
  reserved: 'reserved',
  deprecatedSiteLocal: 'site-local (deprecated)',
};

/**
 * The IPv4 address an IPv6 address stands for, when it carries one a connection would reach:
 * IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d).
 */
function carriedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  if (address.isIPv4MappedAddress()) return address.toIPv4Address();
  if (address.range() === 'rfc6145' || address.match(NAT64)) {
    const [a = 0, b = 0, c = 0, d = 0] = address.toByteArray().slice(12);
    return new ipaddr.IPv4([a, b, c, d]);
  }
  return undefined;
}

const ipv4At = (bytes: number[], at: number, invert = 0): ipaddr.IPv4 =>
  new ipaddr.IPv4(bytes.slice(at, at + 4).map((byte) => byte ^ invert));

/**
 * Every IPv4 address an IPv6 address spells, whether a connection reaches it directly or through a
 * relay: carriedIPv4's, IPv4-compatible (::a.b.c.d), 6to4 (2002:a.b.c.d::) and both of Teredo's.
 * The cloud metadata addresses are refused in any of these spellings.
 */
function embeddedIPv4s(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const bytes = address.toByteArray();
  const carried = carriedIPv4(address);
  if (carried) return [carried];
  if (address.match(NAT64_LOCAL)) return [ipv4At(bytes, 12)];
  if (address.match(IPV4_COMPATIBLE)) return [ipv4At(bytes, 12)];
  if (address.match(SIX_TO_FOUR)) return [ipv4At(bytes, 2)];
  if (address.match(TEREDO)) return [ipv4At(bytes, 4), ipv4At(bytes, 12, 0xff)];
  return [];
}

const isCloudMetadata = (address: Address): boolean =>
  CLOUD_METADATA.some((metadata) => metadata.kind() === address.kind() && metadata.toString() === address.toString());

/** What kind of non-public address this is, or undefined for a public unicast address. */
function nonPublicKind(address: Address): string | undefined {
  const range = address.range();
  if (range === 'unicast') {
    return address.kind() === 'ipv6' && address.match(IPV4_COMPATIBLE) ? 'IPv4-compatible IPv6 (deprecated)' : undefined;
  }
  return RANGE_WORDS[range] ?? `not a public unicast address (${range})`;
}

/**
 * Why the policy refuses `ip` (`loopback; <LOCAL_WAY_OUT>`, `a cloud metadata address`, …), or
 * undefined when it may be connected to. An IPv6 address carrying an IPv4 one is judged by the
 * IPv4 address. With allowPrivate every address but the cloud metadata ones passes.
 */
function refusalOf(ip: string, policy: DestinationPolicy): string | undefined {
  let parsed: Address;
  try {
    parsed = ipaddr.parse(ip);
  } catch {
    return 'not an IP address';
  }
  const address = (parsed.kind() === 'ipv6' && carriedIPv4(parsed as ipaddr.IPv6)) || parsed;
  const spelled = parsed.kind() === 'ipv6' ? embeddedIPv4s(parsed as ipaddr.IPv6) : [];
  if ([parsed, ...spelled].some(isCloudMetadata)) return 'a cloud metadata address';
  if (policy.allowPrivate) return undefined;
  const kind = nonPublicKind(address);
  // Refused only because the setting is off: say how to get past it.
  return kind === undefined ? undefined : `${kind}; ${LOCAL_WAY_OUT}`;
}

/**
 * Throws DestinationRefusedError (`reason: 'address'`, message `address 10.0.0.1 is private; …`)
 * unless `ip` is a public unicast address, or with allowPrivate any address but a cloud metadata
 * one. IPv4-mapped (and NAT64) IPv6 addresses are judged by the IPv4 address they carry.
 */
export function assertPublicAddress(ip: string, policy: DestinationPolicy): void {
  const refusal = refusalOf(ip, policy);
  if (refusal !== undefined) throw new DestinationRefusedError('address', `address ${ip} is ${refusal}`, ip);
}

/** The URL's host as Node connects to it: an IPv6 literal without its brackets. */
function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * The authority (`host:port`, and any `user@`) as written: between `scheme://` and the first `/`,
 * `?` or `#`, or undefined without `//`. The URL parser forgives what this refuses (it reads `\`
 * as `/`, and the path of `https:///x` as its host), so a URL shown as sent would name a host other
 * than the one a delivery reaches. Tabs and line breaks are dropped first, as the parser does.
 */
function writtenAuthority(text: string): string | undefined {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)/.exec(text.replace(/[\t\n\r]/g, '').trim())?.[1];
}

/**
 * The rules on a host name (not an IP literal) that need no DNS: no trailing dot (`hooks.example.`
 * is looked up apart from `hooks.example`, and `localhost.` or `vm.` may reach this machine by a
 * path the name check does not see), and, unless allowPrivate, not `localhost` nor a name under
 * `.localhost` (RFC 6761: this machine, whatever a resolver says).
 */
function assertHostName(host: string, policy: DestinationPolicy): void {
  if (host.endsWith('.')) {
    throw new DestinationRefusedError('host-name', `the webhook URL's host ${host} must not end with a dot: write ${host.replace(/\.+$/, '') || 'the name'} without it`);
  }
  if (!policy.allowPrivate && (host === 'localhost' || host.endsWith('.localhost'))) {
    throw new DestinationRefusedError('host-name', `the webhook URL's host ${host} is this machine (localhost); ${LOCAL_WAY_OUT}`);
  }
}

/**
 * Checks a webhook URL against the rules that need no DNS and returns it parsed: `https:` (with
 * allowPrivate also `http:`), an authority written out with a host, no user name or password, no
 * backslash, no port 0, an IP-literal host must be a public address (assertPublicAddress), a name
 * must pass assertHostName.
 * Throws DestinationRefusedError otherwise.
 */
export function checkEndpointUrl(text: string, policy: DestinationPolicy): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DestinationRefusedError('not-a-url', 'the webhook URL is not a valid absolute URL');
  }
  const schemes = policy.allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    const wayOut = url.protocol === 'http:' ? `; ${LOCAL_WAY_OUT}` : '';
    throw new DestinationRefusedError('scheme', `the webhook URL must use ${schemes.join(' or ')}, not ${url.protocol}${wayOut}`);
  }
  const authority = writtenAuthority(text);
  if (authority?.includes('\\')) throw new DestinationRefusedError('authority', 'the webhook URL must not have a backslash before its path');
  if (url.username !== '' || url.password !== '' || authority?.includes('@')) {
    throw new DestinationRefusedError('credentials', 'the webhook URL must not carry a user name or password');
  }
  const host = hostOf(url);
  if (host === '' || !authority) throw new DestinationRefusedError('no-host', 'the webhook URL has no host: it must start with https://host');
  if (url.port === '0') throw new DestinationRefusedError('port', 'the webhook URL must not use port 0');
  if (isIP(host) !== 0) assertPublicAddress(host, policy);
  else assertHostName(host, policy);
  return url;
}

/** Throws for the first address of `addresses` the policy refuses, naming the host it came from. */
function assertAllPublic(hostname: string, addresses: readonly dns.LookupAddress[], policy: DestinationPolicy): void {
  for (const { address } of addresses) {
    const refusal = refusalOf(address, policy);
    if (refusal !== undefined) {
      throw new DestinationRefusedError('address', `${hostname} resolves to ${address}, which is ${refusal}`, address);
    }
  }
}

/** dns.lookup asked for every address (the form `checkedLookup` and `resolveAndCheck` use). */
export type ResolveAll = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

/**
 * A `lookup` for net/tls/http sockets (`http.request({ lookup })`, an Agent's options) that
 * resolves with dns.lookup and fails the connection with DestinationRefusedError before it is
 * made when any address of the host is refused (not only the one that would be tried first: with
 * Happy Eyeballs Node tries several). `resolve` is replaceable for tests.
 */
export function checkedLookup(policy: DestinationPolicy, resolve: ResolveAll = dns.lookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      try {
        assertAllPublic(hostname, addresses, policy);
      } catch (refusal) {
        return callback(refusal as DestinationRefusedError, '');
      }
      const [first] = addresses;
      if (options.all) return callback(null, addresses);
      if (first === undefined) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
      return callback(null, first.address, first.family);
    });
  };
}

/**
 * The registration-time check: checkEndpointUrl, then the host resolved now, refused when any of
 * its addresses is (`reason: 'address'`) or when it does not resolve (`reason: 'unresolvable'`).
 * Deliveries check again at each connection.
 */
export async function resolveAndCheck(text: string, policy: DestinationPolicy, resolve: ResolveAll = dns.lookup): Promise<URL> {
  const url = checkEndpointUrl(text, policy);
  const host = hostOf(url);
  if (isIP(host) !== 0) return url;
  const addresses = await new Promise<dns.LookupAddress[]>((done, fail) => {
    resolve(host, { all: true }, (error, found) => {
      if (error) fail(new DestinationRefusedError('unresolvable', `the webhook URL's host ${host} does not resolve (${error.code ?? error.message}); register it once its name resolves to a public address`));
      else done(found);
    });
  });
  assertAllPublic(host, addresses, policy);
  return url;
}
