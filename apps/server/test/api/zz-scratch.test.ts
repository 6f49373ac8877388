import { afterAll, beforeAll, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';

let env: TestServer;
beforeAll(async () => { env = await startTestServer(); });
afterAll(() => env.close());

it('explore', async () => {
  const log = (label: string, r: any) => console.log(label, r.status ?? r.response?.status, JSON.stringify(r.body ?? r.data ?? r.error));
  const g = await env.client('iago').GET('/user_groups', { params: { query: {} } });
  log('list', g);
  const c = await env.client('hamlet').POST('/user_groups/create', { body: { name: 'g1', description: 'd', members: [env.users.hamlet.id] } });
  log('create', c);
  const id = c.data!.group_id;
  const form = (o: Record<string,string>) => ({ method: 'PATCH', body: new URLSearchParams(o), as: 'hamlet' as const });
  log('mention int', await env.raw(`/user_groups/${id}`, form({ can_mention_group: '11' })));
  log('mention str', await env.raw(`/user_groups/${id}`, form({ can_mention_group: 'abc' })));
  log('new missing', await env.raw(`/user_groups/${id}`, form({ can_mention_group: '{"old": 11}' })));
  log('extra key', await env.raw(`/user_groups/${id}`, form({ can_mention_group: '{"new": 11, "foo": 1}' })));
  log('anon extra', await env.raw(`/user_groups/${id}`, form({ can_mention_group: '{"new": {"direct_members": [], "direct_subgroups": [], "x": 1}}' })));
  log('anon missing', await env.raw(`/user_groups/${id}`, form({ can_mention_group: '{"new": {"direct_members": []}}' })));
  log('nothing', await env.raw(`/user_groups/${id}`, form({})));
  log('unknown param', await env.raw(`/user_groups/${id}`, form({ description: 'x', foo: '1' })));
  log('get members', await env.client('hamlet').GET('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: id }, query: {} } }));
  log('get members guest', await env.client('polonius').GET('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: id }, query: {} } }));
  log('deactivate guest', await env.raw(`/user_groups/${id}/deactivate`, { method: 'POST', as: 'polonius' }));
  log('members none', await env.raw(`/user_groups/${id}/members`, { method: 'POST', as: 'hamlet', body: new URLSearchParams({}) }));
  log('members bad', await env.raw(`/user_groups/${id}/members`, { method: 'POST', as: 'hamlet', body: new URLSearchParams({add: '[1.5]'}) }));
  log('404 group', await env.raw(`/user_groups/99999/members`, { method: 'GET', as: 'hamlet' }));
  log('is member 404 user', await env.raw(`/user_groups/${id}/members/99999`, { method: 'GET', as: 'hamlet' }));
  log('create missing members', await env.raw(`/user_groups/create`, { method: 'POST', as: 'hamlet', body: new URLSearchParams({name: 'x', description: ''}) }));
  const ev = await env.running.deps.db.event.findMany({ orderBy: { id: 'desc' }, take: 3 });
  console.log(JSON.stringify(ev.map(e => ({...e, id: String(e.id)}))));
});
