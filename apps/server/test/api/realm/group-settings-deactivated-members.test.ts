// A group-setting value as clients see it (FL 303: deactivated users dropped from direct_members) is
// the value `old` must match, and re-sending it as `new` changes nothing.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';

const env = useTestServer();

async function createGroup(name: string, members: number[] = []) {
  const res = await env.client('iago').POST('/user_groups/create', { body: { name, description: name, members } });
  expect(res.response.status).toBe(200);
  return res.data!.group_id;
}

async function settingOf(groupId: number) {
  const groups = (await env.client('iago').GET('/user_groups', { params: { query: { include_deactivated_groups: true } } })).data!.user_groups;
  return groups.find((g) => g.id === groupId)!.can_manage_group;
}

describe('compare-and-swap against values with deactivated members', () => {
  it('accepts as `old` the value shown after a member was deactivated, and treats it as unchanged', async () => {
    const target = await createGroup('cas-target');
    const inner = await createGroup('cas-inner');
    const created = await env.client('iago').POST('/users', { body: { email: 'leaver@parley.test', password: 'leaver password', full_name: 'Leaver' } });
    const leaver = created.data!.user_id;
    const set = await env.client('iago').PATCH('/user_groups/{user_group_id}', {
      params: { path: { user_group_id: target } },
      body: { can_manage_group: { new: { direct_members: [leaver], direct_subgroups: [inner] } } },
    });
    expect(set.response.status).toBe(200);
    expect((await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: leaver } } })).response.status).toBe(200);

    const shown = await settingOf(target);
    expect(shown).toEqual({ direct_members: [], direct_subgroups: [inner] });

    const before = await env.running.deps.db.event.count();
    const same = await env.client('iago').PATCH('/user_groups/{user_group_id}', {
      params: { path: { user_group_id: target } },
      body: { can_manage_group: { new: inner, old: shown } },
    });
    expect(same.response.status).toBe(200);
    expect(await env.running.deps.db.event.count()).toBe(before); // equal values: no change, no event

    const swapped = await env.client('iago').PATCH('/user_groups/{user_group_id}', {
      params: { path: { user_group_id: target } },
      body: { can_manage_group: { new: { direct_members: [env.users.hamlet.id], direct_subgroups: [] }, old: shown } },
    });
    expect(swapped.response.status).toBe(200);
    expect(await settingOf(target)).toEqual({ direct_members: [env.users.hamlet.id], direct_subgroups: [] });
  });
});
