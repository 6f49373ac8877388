// Organization exports: thin handlers over the actions (actions/exports.ts).
import type { Handler } from '../http/handler.ts';
import { doDeleteExport, doRequestExport, listExportConsents, listExports } from '../actions/exports.ts';

export const exportRealm: Handler<'export-realm'> = async ({ params, realm, user, deps, cachedTableWrites }) => {
  const id = await doRequestExport(deps, realm, user, params.export_type ?? 1);
  cachedTableWrites.none();
  return { id };
};

export const getRealmExports: Handler<'get-realm-exports'> = async ({ realm, user, deps }) => ({
  exports: await listExports(deps, realm, user),
});

export const deleteRealmExport: Handler<'delete-realm-export'> = async ({ path, realm, user, deps, cachedTableWrites }) => {
  await doDeleteExport(deps, realm, user, path.export_id);
  cachedTableWrites.none();
  return {};
};

export const getRealmExportConsents: Handler<'get-realm-export-consents'> = async ({ realm, user, deps }) => ({
  export_consents: await listExportConsents(deps, realm, user),
});
