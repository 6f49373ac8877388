// Keeping server-side requests to URLs that users choose (outgoing webhooks) away from the server's own
// network: Zulip sends them through Smokescreen, an egress proxy that refuses private and otherwise
// non-public destinations; Parley checks the destination itself, at connection time.
//
// The address classification is ipaddr.js's (a small, long-kept library, also what Express's
// proxy-addr uses): its range() knows the IANA special-purpose registries for IPv4 and IPv6 (loopback,
// private, link-local, unique-local, carrier-grade NAT, multicast, documentation and benchmarking
// ranges, 6to4/Teredo/NAT64 prefixes that embed an IPv4 address…), and process() turns IPv4-mapped
// IPv6 addresses (::ffff:127.0.0.1) back into IPv4 ones; a hand-written parser would have to get every
// one of those notations right. Only `unicast` (ordinary public) addresses are allowed.
//
// Host names are resolved when the request connects (the `lookup` of node:http), every address the
// name resolves to must be public, and the connection goes to one of those very addresses: a name
// cannot resolve to a public address when checked and a private one when used (DNS rebinding). The
// caller follows no redirects.
import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** A destination refused because it is not a public address. */
export class NonPublicAddressError extends Error {
  constructor(readonly address: string) {
    super(`refused to connect to the non-public address ${address}`);
    this.name = 'NonPublicAddressError';
  }
}

/** Whether `address` (an IPv4 or IPv6 literal, without brackets) is an ordinary public unicast address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

/** The IP literal a URL's host names (brackets of IPv6 removed), or null for a host name. */
export function ipLiteralOf(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : null;
}

/**
 * A `lookup` for node:http/https that resolves the name as usual and refuses (NonPublicAddressError)
 * unless every address it resolves to is public.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) {
      callback(error, '', 0);
      return;
    }
    const list = addresses as dns.LookupAddress[];
    const refused = list.find((a) => !isPublicAddress(a.address));
    if (refused || list.length === 0) {
      callback(new NonPublicAddressError(refused?.address ?? hostname), '', 0);
      return;
    }
    if (options.all) (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
    else callback(null, list[0]!.address, list[0]!.family);
  });
};
