// HTTP byte ranges (RFC 9110, section 14): one range of a Range header, resolved against a size.
import type { RangeRequest } from './types.ts';

/**
 * The one range of a `Range: bytes=…` header, or null when there is none to honour: no header, another
 * unit, a malformed header, or several ranges (answered whole, which the RFC allows).
 */
export function parseRangeHeader(header: string | undefined): RangeRequest | null {
  if (!header) return null;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') return { suffix: Number(m[2]) };
  const start = Number(m[1]);
  if (m[2] === '') return { start };
  const end = Number(m[2]);
  if (end < start) return null; // invalid: ignored, the whole object is served
  return { start, end };
}

/** The bytes a range asks for in an object of `size` bytes (inclusive), or `unsatisfiable`. */
export function resolveRange(range: RangeRequest, size: number): { start: number; end: number } | 'unsatisfiable' {
  if ('suffix' in range) {
    if (range.suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - range.suffix), end: size - 1 };
  }
  if (range.start >= size) return 'unsatisfiable';
  return { start: range.start, end: Math.min(range.end ?? size - 1, size - 1) };
}

/** The Range header value asking for a range (S3's GetObject takes the header as is). */
export function rangeHeaderValue(range: RangeRequest): string {
  return 'suffix' in range ? `bytes=-${range.suffix}` : `bytes=${range.start}-${range.end ?? ''}`;
}
