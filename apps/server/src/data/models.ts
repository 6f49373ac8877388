// Row types re-exported for the layers above the data layer (types only; no Prisma at runtime).
export type { Realm, User, UserSettings, CustomProfileField, CustomProfileFieldValue, RealmEmoji, UserGroup, Channel, Subscription } from '@parley/db';
