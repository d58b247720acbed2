// Address ranges (CIDR) as operators write them in variables, and whether an address lies in one.
import ipaddr from "ipaddr.js";

export type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** The range, or undefined when `text` is not one. Only the usual spellings: ipaddr.js also reads "10/8" and hex or octal parts. */
export function parseCidr(text: string): Cidr | undefined {
  const address = text.slice(0, text.lastIndexOf("/"));
  if (!ipaddr.IPv4.isValidFourPartDecimal(address) && !(address.includes(":") && ipaddr.IPv6.isValid(address))) return undefined;
  try {
    return ipaddr.parseCIDR(text);
  } catch {
    return undefined;
  }
}

/** Whether `address` (as a peer's address is written; IPv4-mapped IPv6 counts as IPv4) lies in one of `ranges`. */
export function inRanges(address: string, ranges: readonly Cidr[]): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  return ranges.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
}
