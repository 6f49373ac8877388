// Read model of the default channel groups: the `default_stream_groups` state of /register and the
// groups carried by `default_stream_groups` events (channel IDs since feature level 330).
import type { Schema } from '@parley/api-types';
import type { RawSql } from '../data/db.ts';
import { listDefaultChannelGroups } from '../data/default-channels.repo.ts';

export async function defaultChannelGroups(db: RawSql, realmId: number): Promise<Schema<'DefaultChannelGroup'>[]> {
  return (await listDefaultChannelGroups(db, realmId)).map((g) => ({ id: g.id, name: g.name, description: g.description, streams: g.channelIds }));
}
