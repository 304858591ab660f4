import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** One whitelist entry, parsed: a single address is a range of full length (/32, /128). */
export interface IpRule {
  address: Address;
  bits: number;
}

/** A dual-stack socket reports an IPv4 peer as `::ffff:10.0.0.1`: compare the IPv4 address it carries. */
function normalise(address: Address): Address {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

/**
 * ipaddr.js alone also reads `012.0.0.1`, `167772161`, `0xa000001` or `10.1` as 10.0.0.1, and
 * `::10.0.0.1` as IPv4-mapped: none of them is an address here.
 */
export function parseAddress(text: string): Address | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (!ipaddr.IPv6.isValid(text)) return undefined;
  const zone = text.indexOf('%');
  const address = zone === -1 ? text : text.slice(0, zone);
  if (!address.includes('.')) return ipaddr.IPv6.parse(text);
  const colon = address.lastIndexOf(':');
  const tail = address.slice(colon + 1);
  if (!ipaddr.IPv4.isValidFourPartDecimal(tail)) return undefined;
  const [a = 0, b = 0, c = 0, d = 0] = ipaddr.IPv4.parse(tail).octets;
  const groups = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  return ipaddr.IPv6.parse(`${address.slice(0, colon + 1)}${groups}${zone === -1 ? '' : text.slice(zone)}`);
}

/** An IPv4-mapped IPv6 range (`::ffff:10.0.0.0/104`) becomes the IPv4 range it covers; undefined for anything else. */
export function parseIpRule(entry: string): IpRule | undefined {
  const text = entry.trim();
  if (text === '') return undefined;
  try {
    if (text.includes('/')) {
      const slash = text.lastIndexOf('/');
      const address = parseAddress(text.slice(0, slash));
      const bits = /^(0|[1-9]\d{0,2})$/.test(text.slice(slash + 1)) ? Number(text.slice(slash + 1)) : NaN;
      if (!address || !(bits <= (address.kind() === 'ipv4' ? 32 : 128))) return undefined;
      if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
        return bits >= 96 ? { address: (address as ipaddr.IPv6).toIPv4Address(), bits: bits - 96 } : { address, bits };
      }
      return { address, bits };
    }
    const parsed = parseAddress(text);
    if (!parsed) return undefined;
    const address = normalise(parsed);
    return { address, bits: address.kind() === 'ipv4' ? 32 : 128 };
  } catch {
    return undefined;
  }
}

/** True when the text is a whitelist entry the gate understands (for the CLI's input checks). */
export const isValidIpRule = (entry: string): boolean => parseIpRule(entry) !== undefined;

/** Undefined when missing or not an address, which no whitelist allows. */
export function parseCallerIp(ip: string | undefined): Address | undefined {
  if (ip === undefined || ip === '') return undefined;
  try {
    const address = parseAddress(ip);
    return address && normalise(address);
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

/** An IPv6 caller counts by its /64: one host is usually given a whole /64, so each address apart would multiply the bound. */
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

/** Entries that do not parse never match (the CLI refuses them; this guards rows written by other means). */
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
