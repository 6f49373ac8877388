// POST /messages/render (Zulip's render_message_backend): content rendered as the requester would send
// it now, by sending's own renderer (actions/messages.ts render: mentions, and channel links only to
// channels the requester may read). It changes nothing: nothing is stored, nobody is notified, and the
// content is rendered as given (no trimming, no length or emptiness check, no mention permissions,
// since nothing is sent).
import type { SuccessData } from '@parley/api-types';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { loadPermissionSubject } from '../access/group-settings.ts';
import { render } from './messages.ts';

export async function doRenderMessage(db: Db, realm: Realm, requester: User, content: string): Promise<SuccessData<'render-message'>> {
  const rendered = await render({ db }, realm, await loadPermissionSubject(db, requester), content);
  return { rendered: rendered.html };
}
