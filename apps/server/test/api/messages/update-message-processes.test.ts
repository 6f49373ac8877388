// PATCH /messages/{message_id} from two server processes at once (each its own pool, as two machines
// would have): moves of one topic and edits of its messages interleave, and every change is either
// applied whole and recorded, or refused; topics, reads and history agree afterwards.
import { describe, expect, it } from 'vitest';
import { type Person } from '../../helpers/fixtures.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { useSecondProcess, useTestServer } from '../../helpers/test-server.ts';
import { fresh, useChannel } from '../../helpers/channels.ts';
import { sendMessage } from '../../helpers/queues.ts';

const env = useTestServer();
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
const secondProcess = useSecondProcess(env);

const db = () => env.running.deps.db;

async function patchOn(server: { url: string }, as: Person, id: number, body: Record<string, string>) {
  const res = await fetch(`${server.url}/api/v1/messages/${id}`, {
    method: 'PATCH',
    headers: { Authorization: basicAuth(env.users[as].email, env.users[as].apiKey) },
    body: new URLSearchParams(body),
  });
  return { status: res.status, body: (await res.json()) as { result: string; msg: string } };
}

describe('PATCH /messages/{message_id} from two processes', () => {
  it('moves of one topic and edits of its messages interleave without losing or splitting anything', async () => {
    const topic = fresh('race');
    const ids: number[] = [];
    for (let i = 0; i < 12; i++) ids.push(await sendMessage(env.client(i % 2 ? 'hamlet' : 'othello'), { type: 'stream', to: channel.name, topic, content: `m${i}` }));
    const [x, y] = [fresh('race-x'), fresh('race-y')];
    const requests = [
      patchOn(env.running, 'iago', ids[3]!, { topic: x, propagate_mode: 'change_all', send_notification_to_new_thread: 'false' }),
      patchOn(secondProcess.running, 'iago', ids[8]!, { topic: y, propagate_mode: 'change_all', send_notification_to_new_thread: 'false' }),
      ...ids.map((id, i) => patchOn(i % 3 ? secondProcess.running : env.running, i % 2 ? 'hamlet' : 'othello', id, { content: `m${i} edited` })),
    ];
    const results = await Promise.all(requests);
    expect(results.filter((r) => r.status !== 200).map((r) => r.body)).toEqual([]);

    // The whole topic is in one place: the secondProcess.running move took every message the first had moved.
    const rows = await db().message.findMany({ where: { id: { in: ids } }, orderBy: { id: 'asc' } });
    expect(new Set(rows.map((r) => r.topic)).size).toBe(1);
    expect([x, y]).toContain(rows[0]!.topic);
    // Every change is recorded: two moves and one edit per message, and every edit landed.
    for (const [i, row] of rows.entries()) {
      expect(row.content).toBe(`m${i} edited`);
      const history = row.editHistory as Array<Record<string, unknown>>;
      expect(history.filter((e) => 'prev_topic' in e)).toHaveLength(2);
      expect(history.filter((e) => 'prev_content' in e)).toHaveLength(1);
    }
    // Reads agree on both processes: the old topic is empty, the new one holds everything.
    for (const server of [env.running, secondProcess.running]) {
      const res = await fetch(`${server.url}/api/v1/users/me/${channel.id}/topics`, { headers: { Authorization: basicAuth(env.users.hamlet.email, env.users.hamlet.apiKey) } });
      const names = ((await res.json()) as { topics: Array<{ name: string }> }).topics.map((t) => t.name);
      expect(names).toContain(rows[0]!.topic);
      expect(names).not.toContain(topic);
    }
  });
});
