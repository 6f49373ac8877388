// The runtime Prisma client: Rust-free (prisma-client generator + @prisma/adapter-pg).
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client.ts';

export function createPrismaClient(connectionString: string, options: { max?: number } = {}): PrismaClient {
  const adapter = new PrismaPg({ connectionString, max: options.max ?? 10 });
  return new PrismaClient({ adapter });
}
export type { PrismaClient };
