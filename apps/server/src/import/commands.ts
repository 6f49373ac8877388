// `pnpm manage import | import-slack | export`, run by src/manage.ts before it loads anything else: each
// loads only its own modules (an export never loads the importers, nor markdown or sharp unless the
// archive needs them) on the light dependencies of command-deps.ts. Returns the exit code.
import { loadConfig, validateOrganizationUrl } from '../config.ts';
import { createCommandDeps, openCommandDatabase } from './command-deps.ts';

export const DATA_COMMANDS = ['import', 'import-slack', 'export'] as const;
export type DataCommand = (typeof DATA_COMMANDS)[number];

export const isDataCommand = (command: string): command is DataCommand => (DATA_COMMANDS as readonly string[]).includes(command);

export interface DataCommandArgs {
  file?: string | undefined;
  url?: string | undefined;
  name?: string | undefined;
  realm?: string | undefined;
  type?: string | undefined;
  'send-password-resets'?: boolean | undefined;
  'no-threads'?: boolean | undefined;
}

export async function runDataCommand(command: DataCommand, values: DataCommandArgs, usage: string): Promise<number> {
  if (!values.file) {
    console.error(`--file is required\n${usage}`);
    return 2;
  }
  const file = values.file;
  const config = loadConfig();
  const database = await openCommandDatabase(config);
  let deps: Awaited<ReturnType<typeof createCommandDeps>> | null = null;
  try {
    deps = await createCommandDeps(config, database.url);
    const url = values.url ? validateOrganizationUrl(values.url) : undefined;
    if (command === 'import') {
      const { runImportCommand } = await import('./import-command.ts');
      await runImportCommand(deps, file, { url, name: values.name, ...(values['send-password-resets'] ? { sendPasswordResets: true } : {}) });
    } else if (command === 'import-slack') {
      const { runSlackImportCommand } = await import('./slack-command.ts');
      await runSlackImportCommand(deps, file, { url, name: values.name, convertThreads: values['no-threads'] !== true });
    } else {
      const [{ listRealms, findRealmById }, { parseExportType, runExportCommand }] = await Promise.all([import('../data/realms.repo.ts'), import('../export/command.ts')]);
      const type = parseExportType(values.type);
      const realm = values.realm ? await findRealmById(deps.db, Number(values.realm)) : (await listRealms(deps.db))[0];
      if (!realm) throw new Error('no organization: start the server once or run create-realm');
      await runExportCommand(deps, realm.id, file, type);
    }
    return 0;
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    return 1;
  } finally {
    await deps?.db.$disconnect();
    await database.stop();
  }
}
