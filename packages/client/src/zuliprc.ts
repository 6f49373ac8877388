import { readFileSync } from 'node:fs';

export interface Zuliprc {
  email: string;
  key: string;
  site: string;
}

/** Reads the `[api]` section of a zuliprc INI file (email, key, site). */
export function readZuliprc(file: string): Zuliprc {
  const values: Record<string, string> = {};
  let section = '';
  for (const rawLine of readFileSync(file, 'utf8').split(/\r?\n/)) {
    const line = rawLine.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1]!.trim();
      continue;
    }
    const eq = line.indexOf('=');
    if (section === 'api' && eq > 0) values[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  const { email, key, site } = values;
  if (!email || !key || !site) throw new Error(`${file}: [api] needs email, key and site`);
  return { email, key, site };
}
