// The first start of an empty server greets the new organization, as Zulip greets its new ones: the
// welcome bot posts a few messages in the first channel, so that the owner and everyone who joins
// find a conversation there (and clients that cannot open on an organization without any message,
// such as zulip-terminal, start). The words are Parley's own.
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { findChannelsByNames } from '../data/channels.repo.ts';
import { checkInternalChannelMessage, storeCheckedMessage } from './messages.ts';
import { systemBot, WELCOME_BOT } from './system-bots.ts';

export const WELCOME_TOPIC = 'welcome to Parley!';

function welcomeMessages(channelName: string): Array<{ topic: string; content: string }> {
  return [
    {
      topic: WELCOME_TOPIC,
      content:
        `Hello! This is #**${channelName}**, the channel everyone here joins. ` +
        'Every message in a channel belongs to a **topic** (this one is in `' + WELCOME_TOPIC + '`), so ' +
        'that several conversations can go on side by side without getting mixed up.',
    },
    {
      topic: WELCOME_TOPIC,
      content:
        'Start a new topic for each new subject, and answer in a topic to carry on its conversation. ' +
        'A conversation that drifts can be moved to a topic or channel of its own later, and a topic whose ' +
        'question is answered can be marked resolved.',
    },
    {
      topic: 'getting started',
      content:
        'Parley speaks the API of Zulip, so the Zulip apps for phones and desktops, the terminal client and ' +
        'the Python and JavaScript libraries all work here. Invite your team, create channels for your ' +
        "projects, and connect your tools' notifications through bots and incoming webhooks.",
    },
  ];
}

/** Posts the welcome messages in the organization's first channel (nothing when it is gone). */
export async function sendWelcomeMessages(deps: AppDeps, realmId: number, channelName: string): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const realm = await findRealmById(tx, realmId);
    const [channel] = realm ? await findChannelsByNames(tx, realm.id, [channelName]) : [];
    if (!realm || !channel) return;
    const bot = await systemBot(tx, deps, realm, WELCOME_BOT);
    for (const { topic, content } of welcomeMessages(channel.name)) {
      const checked = await checkInternalChannelMessage(tx, realm, bot, channel, topic, content, []);
      await storeCheckedMessage(tx, afterCommit, deps, realm, bot, checked, { client: 'Internal' });
    }
  });
}
