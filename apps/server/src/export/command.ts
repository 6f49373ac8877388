// `pnpm manage export --file <out.tar.gz> [--type public|full] [--realm <id>]`: the organization
// export written straight to a file, with no limit of size (Zulip's manage.py export). `full` is the
// export with members' consent (type 2); `public` (type 1) is the default.
import { createWriteStream } from 'node:fs';
import type { AppDeps } from '../deps.ts';
import { ExportType, type ExportTypeValue } from '../data/exports.repo.ts';
import { exportRealm } from './realm-export.ts';

export function parseExportType(value: string | undefined): ExportTypeValue {
  if (value === undefined || value === 'public' || value === '1') return ExportType.PUBLIC;
  if (value === 'full' || value === 'consent' || value === '2') return ExportType.FULL_WITH_CONSENT;
  throw new Error(`unknown export type ${value} (public, full)`);
}

export async function runExportCommand(deps: Pick<AppDeps, 'db' | 'storage'>, realmId: number, file: string, type: ExportTypeValue): Promise<void> {
  const output = createWriteStream(file, { mode: 0o600 });
  const tty = process.stderr.isTTY;
  const result = await exportRealm(deps, realmId, type, output, {
    onProgress: (n) => {
      if (tty) process.stderr.write(`\rmessages exported: ${n}`);
    },
  });
  if (tty) process.stderr.write('\n');
  console.log(`exported organization ${realmId} (${type === ExportType.PUBLIC ? 'public' : 'full with consent'}): ${result.messages} messages, ${result.size} bytes, sha256 ${result.sha256}\nwritten to ${file} (directory ${result.directory}/)`);
}
