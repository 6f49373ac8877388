// The runtime Prisma client: Rust-free (prisma-client generator + @prisma/adapter-pg).
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client.ts';

export function createPrismaClient(connectionString: string, options: { max?: number; emitQueryEvents?: boolean } = {}): PrismaClient {
  const adapter = new PrismaPg({ connectionString, max: options.max ?? 10 });
  // emitQueryEvents: `client.$on('query', …)` sees every statement (tests count queries with it).
  return new PrismaClient({ adapter, ...(options.emitQueryEvents ? { log: [{ emit: 'event' as const, level: 'query' as const }] } : {}) }) as PrismaClient;
}
export type { PrismaClient };
