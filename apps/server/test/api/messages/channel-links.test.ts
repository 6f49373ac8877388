// Channel links in messages (issue 20, defect 4): #**name** and #**name>topic** become links only to
// channels whose content the sender may access (Zulip's get_stream_name_map with the sender as acting
// user: get_content_access_streams). Any other channel stays the literal text, as an unknown name
// does, so that a link reveals neither that a private channel exists nor its id.
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel } from '../../helpers/channels.ts';
import { systemGroupIds } from '../../helpers/groups.ts';

const env = useTestServer();
/** Public; everyone but the guest subscribed. */
let pub: { id: number; name: string };
/** Public; the guest subscribed. */
let guests: { id: number; name: string };
/** Private; only iago subscribed. */
let secret: { id: number; name: string };
/** Private; only othello subscribed (iago, an administrator, is not). */
let othellos: { id: number; name: string };
/** Private; nobody but iago subscribed, but members may subscribe themselves (can_subscribe_group). */
let joinable: { id: number; name: string };
beforeAll(async () => {
  pub = await createChannel(env, 'iago', { name: 'links public' }, ['iago', 'hamlet', 'othello']);
  guests = await createChannel(env, 'iago', { name: 'links guests' }, ['iago', 'hamlet', 'polonius']);
  secret = await createChannel(env, 'iago', { name: 'links secret', invite_only: true }, ['iago']);
  othellos = await createChannel(env, 'othello', { name: 'links othello', invite_only: true }, ['othello']);
  joinable = await createChannel(env, 'iago', { name: 'links joinable', invite_only: true }, ['iago']);
  const sys = await systemGroupIds(env);
  const { error } = await env.client('iago').PATCH('/streams/{stream_id}', {
    params: { path: { stream_id: joinable.id } },
    body: { can_subscribe_group: { new: sys['role:members'] } },
  });
  if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
});

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

/** Sends `content` as `as` (to the channel, or as a direct message to iago) and returns the rendered HTML stored. */
async function rendered(as: Person, content: string, to: { id: number; name: string } | 'iago' = pub): Promise<string> {
  const body: Record<string, string> =
    to === 'iago'
      ? { type: 'private', to: JSON.stringify([uid('iago')]), content }
      : { type: 'stream', to: JSON.stringify(to.id), topic: 'links', content };
  const res = await env.raw('/messages', {
    method: 'POST',
    as,
    body: new URLSearchParams(body),
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  if (res.status !== 200) throw new Error(`setup: ${JSON.stringify(res.body)}`);
  return (await db().message.findUniqueOrThrow({ where: { id: res.body.id } })).renderedContent;
}

const link = (c: { id: number }) => `data-stream-id="${c.id}"`;

describe('#**channel** links', () => {
  it('a private channel the sender cannot read stays text, exactly as an unknown name does', async () => {
    const html = await rendered('hamlet', `see #**${secret.name}** and #**${secret.name}>plans**`);
    expect(html).not.toContain('data-stream-id');
    expect(html).toBe(`<p>see #**${secret.name}** and #**${secret.name}&gt;plans**</p>`);
    expect(await rendered('hamlet', `see #**no such channel** and #**no such channel>plans**`)).toBe('<p>see #**no such channel** and #**no such channel&gt;plans**</p>');
  });

  it('a private channel the sender is subscribed to is linked', async () => {
    const html = await rendered('iago', `see #**${secret.name}** and #**${secret.name}>plans**`);
    expect(html).toContain(`<a class="stream" ${link(secret)}`);
    expect(html).toContain(`<a class="stream-topic" ${link(secret)}`);
  });

  it('an administrator not subscribed to a private channel gets no link (content access, not metadata access)', async () => {
    expect(await rendered('iago', `#**${othellos.name}**`)).toBe(`<p>#**${othellos.name}**</p>`);
    expect(await rendered('othello', `#**${othellos.name}**`)).toContain(link(othellos));
  });

  it('a private channel the sender may subscribe to is linked (can_subscribe_group)', async () => {
    expect(await rendered('hamlet', `#**${joinable.name}**`)).toContain(link(joinable));
    expect(await rendered('polonius', `#**${joinable.name}**`, guests)).toBe(`<p>#**${joinable.name}**</p>`);
  });

  it('public channels are linked for members whether subscribed or not', async () => {
    expect(await rendered('cordelia', `#**${pub.name}**`, 'iago')).toContain(link(pub));
    expect(await rendered('hamlet', `#**${guests.name}>x**`)).toContain(link(guests));
  });

  it('guests get links only to the public channels they are subscribed to', async () => {
    const html = await rendered('polonius', `#**${pub.name}** #**${guests.name}** #**${pub.name}>t**`, guests);
    expect(html).not.toContain(link(pub));
    expect(html).toContain(`<a class="stream" ${link(guests)}`);
    expect(html).toBe(
      `<p>#**${pub.name}** <a class="stream" ${link(guests)} href="/#narrow/channel/${guests.id}-links-guests-${guests.name.split(' ').at(-1)}">#${guests.name}</a> #**${pub.name}&gt;t**</p>`,
    );
  });

  it('direct messages follow the same rule', async () => {
    expect(await rendered('hamlet', `#**${secret.name}**`, 'iago')).toBe(`<p>#**${secret.name}**</p>`);
    expect(await rendered('othello', `#**${othellos.name}**`, 'iago')).toContain(link(othellos));
  });
});
