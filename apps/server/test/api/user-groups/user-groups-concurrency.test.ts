// Concurrency: many requests on one group at once end in a consistent state with no lost update and no
// deadlock or serialization error reaching a client; concurrent {new, old} updates let exactly one win;
// concurrent subgroup additions never create a cycle; a group cannot end up deactivated while a
// concurrent request made it a permission value. No timing is asserted: only outcomes and final state.
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { allSubgroups, createGroup, directMembers, readGroup, sorted, useSystemGroupIds } from '../../helpers/groups.ts';

const env = useTestServer();
const sys = useSystemGroupIds(env);
/** Fifty extra active members of the organization, created directly in the database. */
let extra: number[];

beforeAll(async () => {
  const db = env.running.deps.db;
  const realm = await db.realm.findFirstOrThrow();
  const tag = randomBytes(4).toString('hex');
  await db.user.createMany({
    data: Array.from({ length: 50 }, (_, i) => {
      const email = `concurrent-${tag}-${i}@parley.test`;
      return { realmId: realm.id, email, deliveryEmail: email, fullName: `Concurrent ${i}`, role: 400 };
    }),
  });
  extra = (await db.user.findMany({ where: { deliveryEmail: { startsWith: `concurrent-${tag}-` } }, orderBy: { id: 'asc' }, select: { id: true } })).map((u) => u.id);
  await db.userGroupMember.createMany({ data: extra.map((userId) => ({ groupId: sys['role:fullmembers'], userId })) });
});

// ---------------------------------------------------------------------------------------------
// helpers

const uid = (person: Person) => env.users[person].id;

interface Outcome {
  status: number;
  msg: string;
  code?: string;
}
const outcome = (res: { response: Response; error?: unknown }): Outcome => ({
  status: res.response.status,
  msg: (res.error as { msg?: string } | undefined)?.msg ?? '',
  code: (res.error as { code?: string } | undefined)?.code,
});

/** Every outcome is a success or one of the expected errors: never a 500, a deadlock or a timeout. */
function expectOnly(outcomes: Outcome[], allowedErrors: string[]): void {
  for (const o of outcomes) {
    if (o.status === 200) continue;
    expect(o.status, JSON.stringify(o)).toBe(400);
    expect(allowedErrors, JSON.stringify(o)).toContain(o.msg);
  }
}

// ---------------------------------------------------------------------------------------------

describe('concurrent member changes on one group', () => {
  it('50 concurrent single-user adds and removes all succeed and end in exactly the expected membership', async () => {
    const initial = extra.slice(0, 25);
    const added = extra.slice(25, 50);
    const groupId = await createGroup(env, 'iago', { members: initial });
    const before = await markEvents(env);
    const members = (body: { add?: number[]; delete?: number[] }) =>
      env.client('iago').POST('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: groupId } }, body });
    const requests = [...initial.map((id) => () => members({ delete: [id] })), ...added.map((id) => () => members({ add: [id] }))];
    // Interleave removals and additions.
    const interleaved = requests.map((_, i) => requests[i % 2 === 0 ? i / 2 : 25 + (i - 1) / 2]!);
    const outcomes = (await Promise.all(interleaved.map((run) => run()))).map(outcome);

    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    expect(await directMembers(env, groupId)).toEqual(sorted(added));

    // One stored event per request, none lost.
    const events = (await eventPayloadsSince(env, before)).filter((e) => e.type === 'user_group' && e.group_id === groupId);
    const addedIds = events.filter((e) => e.op === 'add_members').flatMap((e) => e.user_ids);
    const removedIds = events.filter((e) => e.op === 'remove_members').flatMap((e) => e.user_ids);
    expect(events).toHaveLength(50);
    expect(sorted(addedIds)).toEqual(sorted(added));
    expect(sorted(removedIds)).toEqual(sorted(initial));
  });

  it('50 concurrent adds of the same user: exactly one succeeds, the others are told the user is a member', async () => {
    const groupId = await createGroup(env, 'iago');
    const target = extra[0]!;
    const outcomes = (
      await Promise.all(
        Array.from({ length: 50 }, () =>
          env.client('iago').POST('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: groupId } }, body: { add: [target] } }),
        ),
      )
    ).map(outcome);
    expect(outcomes.filter((o) => o.status === 200)).toHaveLength(1);
    expectOnly(outcomes, [`User ${target} is already a member of this group`]);
    expect(await directMembers(env, groupId)).toEqual([target]);
  });

  it('50 concurrent multi-user changes with subgroup edits on two groups: no error reaches a client, nothing is lost', async () => {
    const g1 = await createGroup(env, 'iago');
    const g2 = await createGroup(env, 'iago');
    const subs: number[] = [];
    for (let i = 0; i < 10; i++) subs.push(await createGroup(env, 'iago'));
    const requests = extra.map((userId, i) => {
      const groupId = i % 2 === 0 ? g1 : g2;
      // Requests alternate between the two groups and every fifth one also adds a subgroup, so that
      // group row locks and the subgroup-graph lock interleave; a third of them come from the owner.
      const body: { add: number[]; add_subgroups?: number[] } = { add: [userId] };
      if (i % 5 === 0) body.add_subgroups = [subs[i / 5]!];
      return () => env.client(i % 3 === 0 ? 'desdemona' : 'iago').POST('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: groupId } }, body });
    });
    // Renames of both groups run at the same time.
    const renames = Array.from({ length: 6 }, (_, i) => () =>
      env.client('iago').PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: i % 2 ? g1 : g2 } }, body: { description: `round ${i}` } }),
    );
    const outcomes = (await Promise.all([...requests, ...renames].map((run) => run()))).map(outcome);
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    expect(await directMembers(env, g1)).toEqual(sorted(extra.filter((_, i) => i % 2 === 0)));
    expect(await directMembers(env, g2)).toEqual(sorted(extra.filter((_, i) => i % 2 === 1)));
    const expectedSubs = (parity: number) => sorted(subs.filter((_, k) => (k * 5) % 2 === parity));
    expect((await readGroup(env, g1)).direct_subgroup_ids).toEqual(expectedSubs(0));
    expect((await readGroup(env, g2)).direct_subgroup_ids).toEqual(expectedSubs(1));
  });
});

describe('concurrent {new, old} updates', () => {
  it('20 concurrent group-setting updates with the same old: exactly one wins', async () => {
    const groupId = await createGroup(env, 'iago', { members: [], can_manage_group: { direct_members: [uid('iago')], direct_subgroups: [] } });
    const old = { direct_members: [uid('iago')], direct_subgroups: [] };
    const candidates = extra.slice(0, 20);
    const before = await markEvents(env);
    const responses = await Promise.all(
      candidates.map((userId) =>
        env.client('iago').PATCH('/user_groups/{user_group_id}', {
          params: { path: { user_group_id: groupId } },
          body: { can_manage_group: { new: { direct_members: [userId, uid('iago')], direct_subgroups: [] }, old } },
        }),
      ),
    );
    const outcomes = responses.map(outcome);
    const winners = candidates.filter((_, i) => outcomes[i]!.status === 200);
    expect(winners).toHaveLength(1);
    expectOnly(outcomes, ["'old' value does not match the expected value."]);
    expect(outcomes.filter((o) => o.status === 400).every((o) => o.code === 'EXPECTATION_MISMATCH')).toBe(true);

    const winner = winners[0]!;
    expect((await readGroup(env, groupId)).can_manage_group).toEqual({ direct_members: sorted([winner, uid('iago')]), direct_subgroups: [] });
    const updates = (await eventPayloadsSince(env, before)).filter((e) => e.type === 'user_group' && e.group_id === groupId);
    expect(updates).toEqual([
      { type: 'user_group', op: 'update', group_id: groupId, data: { can_manage_group: { direct_members: sorted([winner, uid('iago')]), direct_subgroups: [] } } },
    ]);
  });

  it('20 concurrent updates to the same new value with the same old: exactly one changes it', async () => {
    const groupId = await createGroup(env, 'iago');
    const outcomes = (
      await Promise.all(
        Array.from({ length: 20 }, () =>
          env.client('iago').PATCH('/user_groups/{user_group_id}', {
            params: { path: { user_group_id: groupId } },
            body: { can_join_group: { new: sys['role:members'], old: sys['role:nobody'] } },
          }),
        ),
      )
    ).map(outcome);
    expect(outcomes.filter((o) => o.status === 200)).toHaveLength(1);
    expectOnly(outcomes, ["'old' value does not match the expected value."]);
    expect((await readGroup(env, groupId)).can_join_group).toBe(sys['role:members']);
  });

  it('20 concurrent organization-setting updates with the same old: exactly one wins', async () => {
    const targets: number[] = [];
    for (let i = 0; i < 20; i++) targets.push(await createGroup(env, 'iago'));
    const before = await markEvents(env);
    const responses = await Promise.all(
      targets.map((target) => env.client('iago').PATCH('/realm', { body: { can_create_private_channel_group: { new: target, old: sys['role:members'] } } })),
    );
    try {
      const outcomes = responses.map(outcome);
      const winners = targets.filter((_, i) => outcomes[i]!.status === 200);
      expect(winners).toHaveLength(1);
      expectOnly(outcomes, ["'old' value does not match the expected value."]);
      const realm = await env.running.deps.db.realm.findFirstOrThrow();
      expect(realm.canCreatePrivateChannelGroupId).toBe(winners[0]);
      const realmEvents = (await eventPayloadsSince(env, before)).filter((e) => e.type === 'realm');
      expect(realmEvents).toEqual([{ type: 'realm', op: 'update_dict', property: 'default', data: { can_create_private_channel_group: winners[0] } }]);
    } finally {
      await env.client('iago').PATCH('/realm', { body: { can_create_private_channel_group: { new: sys['role:members'] } } });
    }
  });
});

describe('concurrent subgroup changes never create a cycle', () => {
  it('adding A below B and B below A at the same time: exactly one succeeds (10 rounds)', async () => {
    for (let round = 0; round < 10; round++) {
      const a = await createGroup(env, 'iago');
      const b = await createGroup(env, 'iago');
      const add = (to: number, sub: number) =>
        env.client('iago').POST('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: to } }, body: { add: [sub] } });
      const outcomes = (await Promise.all([add(a, b), add(b, a)])).map(outcome);
      expect(outcomes.filter((o) => o.status === 200), `round ${round}: ${JSON.stringify(outcomes)}`).toHaveLength(1);
      expectOnly(outcomes, [`User group ${a} is already a subgroup of one of the passed subgroups.`, `User group ${b} is already a subgroup of one of the passed subgroups.`]);
      expect(await allSubgroups(env, a)).not.toContain(a);
      expect(await allSubgroups(env, b)).not.toContain(b);
    }
  });

  it('closing a three-group ring from three requests at once leaves it open (10 rounds)', async () => {
    for (let round = 0; round < 10; round++) {
      const g = [await createGroup(env, 'iago'), await createGroup(env, 'iago'), await createGroup(env, 'iago')];
      const outcomes = (
        await Promise.all(
          g.map((to, i) =>
            env.client('iago').POST('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: to } }, body: { add: [g[(i + 1) % 3]!] } }),
          ),
        )
      ).map(outcome);
      expect(outcomes.filter((o) => o.status === 200).length, `round ${round}`).toBe(2);
      expectOnly(outcomes, g.map((id) => `User group ${id} is already a subgroup of one of the passed subgroups.`));
      for (const id of g) expect(await allSubgroups(env, id)).not.toContain(id);
    }
  });
});

describe('deactivation racing a new use of the group', () => {
  it('a group is never left deactivated while a concurrent request made it a group-setting value (15 rounds)', async () => {
    for (let round = 0; round < 15; round++) {
      const x = await createGroup(env, 'iago');
      const y = await createGroup(env, 'iago');
      const [deactivated, used] = (
        await Promise.all([
          env.client('iago').POST('/user_groups/{user_group_id}/deactivate', { params: { path: { user_group_id: x } } }),
          env.client('iago').PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: y } }, body: { can_mention_group: { new: x } } }),
        ])
      ).map(outcome);
      const state = `round ${round}: deactivate ${JSON.stringify(deactivated)}, use ${JSON.stringify(used)}`;
      expect([deactivated!.status, used!.status].filter((s) => s === 200), state).toHaveLength(1);
      if (deactivated!.status === 200) expect(used!.msg, state).toBe('User group is deactivated.');
      else expect(deactivated!.code, state).toBe('CANNOT_DEACTIVATE_GROUP_IN_USE');
      const xNow = await readGroup(env, x);
      const yNow = await readGroup(env, y);
      expect(xNow.deactivated && yNow.can_mention_group === x, state).toBe(false);
    }
  });

  it('a group is never left deactivated while a concurrent request made it a subgroup (15 rounds)', async () => {
    for (let round = 0; round < 15; round++) {
      const x = await createGroup(env, 'iago');
      const y = await createGroup(env, 'iago');
      const [deactivated, used] = (
        await Promise.all([
          env.client('iago').POST('/user_groups/{user_group_id}/deactivate', { params: { path: { user_group_id: x } } }),
          env.client('iago').POST('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: y } }, body: { add: [x] } }),
        ])
      ).map(outcome);
      const state = `round ${round}: deactivate ${JSON.stringify(deactivated)}, subgroup ${JSON.stringify(used)}`;
      expect([deactivated!.status, used!.status].filter((s) => s === 200), state).toHaveLength(1);
      if (deactivated!.status === 200) expect(used!.msg, state).toBe('User group is deactivated.');
      else expect(deactivated!.code, state).toBe('CANNOT_DEACTIVATE_GROUP_IN_USE');
    }
  });

  it('a group is never left deactivated while a concurrent request made it an organization-setting value (15 rounds)', async () => {
    try {
      for (let round = 0; round < 15; round++) {
        const x = await createGroup(env, 'iago');
        const [deactivated, used] = (
          await Promise.all([
            env.client('iago').POST('/user_groups/{user_group_id}/deactivate', { params: { path: { user_group_id: x } } }),
            env.client('iago').PATCH('/realm', { body: { can_mention_many_users_group: { new: x } } }),
          ])
        ).map(outcome);
        const state = `round ${round}: deactivate ${JSON.stringify(deactivated)}, use ${JSON.stringify(used)}`;
        expect([deactivated!.status, used!.status].filter((s) => s === 200), state).toHaveLength(1);
        if (deactivated!.status === 200) expect(used!.msg, state).toBe('User group is deactivated.');
        else expect(deactivated!.code, state).toBe('CANNOT_DEACTIVATE_GROUP_IN_USE');
        // Release x for the next round.
        await env.client('iago').PATCH('/realm', { body: { can_mention_many_users_group: { new: sys['role:administrators'] } } });
      }
    } finally {
      await env.client('iago').PATCH('/realm', { body: { can_mention_many_users_group: { new: sys['role:administrators'] } } });
    }
  });
});
