import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** One whitelist entry, parsed: a single address is a range of full length (/32, /128). */
export interface IpRule {
  address: Address;
  bits: number;
}

/**
 * Normalises an address so that an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, what a dual-stack
 * socket reports for an IPv4 peer) is compared as the IPv4 address it carries.
 */
function normalise(address: Address): Address {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

/**
 * Parses one whitelist entry: an IPv4 or IPv6 address or CIDR range. IPv4 must be written as
 * four decimal parts (ipaddr.js would otherwise also take `127.1` or `0x7f.1`, which nobody means
 * in an allow-list). An IPv4-mapped IPv6 range (`::ffff:10.0.0.0/104`) becomes the IPv4 range it
 * covers. Returns undefined for anything else.
 */
export function parseIpRule(entry: string): IpRule | undefined {
  const text = entry.trim();
  if (text === '') return undefined;
  try {
    if (text.includes('/')) {
      if (!ipaddr.IPv4.isValidCIDRFourPartDecimal(text) && !ipaddr.IPv6.isValidCIDR(text)) return undefined;
      const [address, bits] = ipaddr.parseCIDR(text);
      if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
        return bits >= 96 ? { address: (address as ipaddr.IPv6).toIPv4Address(), bits: bits - 96 } : { address, bits };
      }
      return { address, bits };
    }
    if (!ipaddr.IPv4.isValidFourPartDecimal(text) && !ipaddr.IPv6.isValid(text)) return undefined;
    const address = normalise(ipaddr.parse(text));
    return { address, bits: address.kind() === 'ipv4' ? 32 : 128 };
  } catch {
    return undefined;
  }
}

/** True when the text is a whitelist entry the gate understands (for the CLI's input checks). */
export const isValidIpRule = (entry: string): boolean => parseIpRule(entry) !== undefined;

/** The caller's address, parsed and normalised; undefined when it is missing or not an address. */
export function parseCallerIp(ip: string | undefined): Address | undefined {
  if (ip === undefined || ip === '') return undefined;
  try {
    return normalise(ipaddr.parse(ip));
  } catch {
    return undefined;
  }
}

/** Recent callers' addresses as displayed: a client sends many requests from one address. */
const displayed = new Map<string, string>();
const MAX_DISPLAYED = 10_000;

/** The caller IP as it is written to the API log (IPv4-mapped addresses as plain IPv4). */
export function displayIp(ip: string | undefined): string {
  if (ip === undefined) return '';
  let shown = displayed.get(ip);
  if (shown === undefined) {
    shown = parseCallerIp(ip)?.toString() ?? ip;
    if (displayed.size >= MAX_DISPLAYED) displayed.clear();
    displayed.set(ip, shown);
  }
  return shown;
}

/**
 * What one caller counts as for a per-IP bound: an IPv4 address alone, an IPv6 address by its
 * /64 (one subscriber or host is usually given a whole /64, so counting each address apart lets
 * it send 2^64 times the bound). Text that is not an address is one caller of its own.
 */
export function callerBucket(ip: string | undefined): string {
  const caller = parseCallerIp(ip);
  if (caller === undefined) return 'not-an-address';
  if (caller.kind() === 'ipv4') return caller.toString();
  const parts = (caller as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

export function ipMatches(caller: Address, rule: IpRule): boolean {
  return caller.kind() === rule.address.kind() && caller.match(rule.address, rule.bits);
}

/**
 * A key's whitelist, parsed once. Entries that do not parse never match (the CLI refuses them on
 * the way in; this only guards against rows written by other means).
 */
export class IpWhitelist {
  readonly rules: IpRule[];
  readonly invalid: string[];

  constructor(entries: readonly string[]) {
    this.rules = [];
    this.invalid = [];
    for (const entry of entries) {
      const rule = parseIpRule(entry);
      if (rule) this.rules.push(rule);
      else this.invalid.push(entry);
    }
  }

  allows(ip: string | undefined): boolean {
    const caller = parseCallerIp(ip);
    return caller !== undefined && this.rules.some((rule) => ipMatches(caller, rule));
  }
}
