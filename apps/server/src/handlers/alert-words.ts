// Alert words: thin handlers over the read model (queries/alert-words.ts) and the actions
// (actions/alert-words.ts), which answer the whole list after the change.
import type { Handler } from '../http/handler.ts';
import { alertWordsOf } from '../queries/alert-words.ts';
import { doAddAlertWords, doRemoveAlertWords } from '../actions/alert-words.ts';

export const getAlertWords: Handler<'get-alert-words'> = async ({ user, deps }) => ({ alert_words: await alertWordsOf(deps.db, user) });

export const addAlertWords: Handler<'add-alert-words'> = async ({ params, realm, user, deps, cachedTableWrites }) => ({
  alert_words: await doAddAlertWords(deps, realm, user, params.alert_words, cachedTableWrites),
});

export const removeAlertWords: Handler<'remove-alert-words'> = async ({ params, realm, user, deps, cachedTableWrites }) => ({
  alert_words: await doRemoveAlertWords(deps, realm, user, params.alert_words, cachedTableWrites),
});
