import { afterAll, beforeAll, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';

let env: TestServer;
beforeAll(async () => { env = await startTestServer({ emitQueryEvents: true }); });
afterAll(() => env.close());

it('explore', async () => {
  const log = (label: string, r: any) => console.log(label, r.status ?? r.response?.status, JSON.stringify(r.body ?? r.data ?? r.error));
  const c = await env.client('hamlet').POST('/user_groups/create', { body: { name: 'g1', description: 'd', members: [env.users.hamlet.id] } });
  const id = c.data!.group_id;
  let queries: string[] = [];
  env.running.deps.db.$on('query' as never, ((e: any) => queries.push(e.query)) as never);
  queries = [];
  log('patch', await env.client('hamlet').PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: id } }, body: { description: 'x2' } }));
  console.log(queries.join('\n---\n'));
  queries = [];
  log('realm', await env.client('iago').PATCH('/realm', { body: { can_create_public_channel_group: { new: 6 } } }));
  log('realm2', await env.client('iago').PATCH('/realm', { body: { can_access_all_users_group: { new: 6 } } }));
  log('realm3', await env.client('iago').PATCH('/realm', { body: { can_create_web_public_channel_group: { new: 2 } } }));
  log('realm4', await env.client('iago').PATCH('/realm', { body: { can_create_groups: { new: 6 } } }));
  log('realm5', await env.client('hamlet').PATCH('/realm', { body: {} }));
  log('realm6', await env.client('iago').PATCH('/realm', { body: {} }));
  log('realm7', await env.client('iago').PATCH('/realm', { body: { can_create_public_channel_group: { new: { direct_members: [5], direct_subgroups: [6] } } } }));
});
