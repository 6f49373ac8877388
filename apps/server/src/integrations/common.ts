// Shared helpers of the integrations (Zulip's zerver/lib/webhooks/git.py and common.py). The Git
// message formatting lives in git-format.ts (written first, by the GitLab/Gitea work) and is
// re-exported here unchanged, so that every integration imports one place; the rest is below.
export * from './git-format.ts';

/** Zulip's get_setup_webhook_message: "<Integration> webhook has been successfully configured[ by <user>]." */
export function setupWebhookMessage(integration: string, userName?: string | null): string {
  return `${integration} webhook has been successfully configured${userName ? ` by ${userName}` : ''}.`;
}

/** `refs/heads/main` → `main` (Zulip's get_branch_name_from_ref). */
export const branchFromRef = (ref: string) => ref.replace(/^refs\/heads\//, '');

/** `refs/tags/v1` → `v1` (Zulip's get_tag_name_from_ref). */
export const tagFromRef = (ref: string) => ref.replace(/^refs\/tags\//, '');
