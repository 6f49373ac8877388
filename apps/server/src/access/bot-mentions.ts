// Which bots a mention gives a copy of a channel message. Zulip gives every generic bot mentioned in a
// channel message a copy (a user_message row) even when it is not subscribed, so that bots driven by
// the API (python-zulip-api's zulip_bots) hear their mentions. Parley does so only where the bot may
// read the channel's messages anyway (a public or web-public channel, the bot not a guest): a copy
// never gives access that the channel's settings do not (README, "Security model").
import type { Channel, User } from '../data/models.ts';
import { isGuest } from './roles.ts';

export const mentionedBotReceivesCopy = (bot: Pick<User, 'role'>, channel: Pick<Channel, 'inviteOnly' | 'isWebPublic'>): boolean =>
  channel.isWebPublic || (!channel.inviteOnly && !isGuest(bot));
