// A test's own database, copied from the seeded template. PostgreSQL refuses the copy while any session
// is connected to the template (`55006`, "source database … is being accessed by other users"); nothing
// of the tests uses the template after the global set-up, but a connection of that set-up still closing
// in the background (pg-boss ends its pool after stop()) can linger on a loaded machine. Such sessions
// are ended and the copy tried again.
import pg from 'pg';

export async function copyTemplateDatabase(adminUrl: string, template: string, database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${database} TEMPLATE ${template}`);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== '55006' || attempt >= 20) throw error;
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [template]);
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      }
    }
  } finally {
    await admin.end();
  }
}
