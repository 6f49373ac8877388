export { createPrismaClient } from './client.ts';
export type { PrismaClient } from './client.ts';
export { Prisma } from './generated/prisma/client.ts';
export type * from './generated/prisma/models.ts';
