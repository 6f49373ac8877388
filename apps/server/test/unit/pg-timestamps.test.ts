// data/pg-transactions.ts utcTimestamp: PostgreSQL's text for a timestamp without time zone, read as UTC,
// by position for the usual form. It must give what reading the text as an ISO date gives, for every
// form PostgreSQL writes (fractions of 1–6 digits, none), and fall back for the rest.
import { describe, expect, it } from 'vitest';
import { utcTimestamp } from '../../src/data/pg-transactions.ts';
import { mulberry32 } from '../../../../bench/lib/prng.ts';

const reference = (text: string) => new Date(`${text.replace(' ', 'T')}Z`);
const pad = (n: number, width: number) => String(n).padStart(width, '0');

describe('utcTimestamp', () => {
  it('reads what PostgreSQL writes as an ISO date would be read', () => {
    const random = mulberry32(28);
    const texts = ['2026-11-28 01:02:03', '2026-11-28 01:02:03.5', '2026-11-28 01:02:03.123456', '1970-01-01 00:00:00', '9999-12-31 23:59:59.999999', '2024-02-29 12:00:00.05'];
    for (let i = 0; i < 5_000; i++) {
      const ms = Date.UTC(1000, 0, 1) + Math.floor(random() * (Date.UTC(9999, 11, 31) - Date.UTC(1000, 0, 1)));
      const d = new Date(ms);
      const digits = Math.floor(random() * 7); // 0: no fraction
      const fraction = digits === 0 ? '' : `.${pad(Math.floor(random() * 10 ** digits), digits)}`.replace(/0+$/, '').replace(/\.$/, '');
      texts.push(`${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)} ${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}${fraction}`);
    }
    for (const text of texts) expect(utcTimestamp(text).getTime(), text).toBe(reference(text).getTime());
  });

  it('leaves the other forms to Date: years before 1000, BC, infinity', () => {
    for (const text of ['0099-05-01 10:00:00', '0999-12-31 23:59:59.5', '0001-01-01 00:00:00 BC', 'infinity', '-infinity']) {
      const got = utcTimestamp(text).getTime();
      const want = reference(text).getTime();
      expect(Number.isNaN(got) ? 'NaN' : got, text).toBe(Number.isNaN(want) ? 'NaN' : want);
    }
  });
});
