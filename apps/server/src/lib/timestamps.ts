/** Zulip's ISO 8601 form with microseconds and an explicit offset: 2019-10-20T07:50:53.728000+00:00. */
export function isoWithOffset(date: Date): string {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ (years 0000–9999)
  return iso.length === 24 ? `${iso.slice(0, 23)}000+00:00` : iso.replace(/\.(\d{3})Z$/, '.$1000+00:00');
}

export const unixSeconds = (date: Date) => Math.floor(date.getTime() / 1000);
