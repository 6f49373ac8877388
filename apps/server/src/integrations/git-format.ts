// Git message formatting shared by the Git integrations (re-exported by common.ts), following
// Zulip's zerver/lib/webhooks/git.py (the wording and punctuation are facts the tests check).
// Summary of the rules:
// - a commit line is "* <first line of message> ([<sha[:11]>](<url>))"; at most 20 are listed, then
//   "[and N more commit(s)]";
// - a push names its committers ("Commits by A (2) and B (1).") unless the only committer is the
//   pusher; over three committers, the rest are "others (n)"; order: most commits first, then name;
// - PR/issue lines end with ":" and a quoted body when there is one, else "." (a title that ends in
//   punctuation gets none).

export const EMPTY_SHA = '0000000000000000000000000000000000000000';
export const COMMITS_LIMIT = 20;
const COMMITTERS_LIMIT = 3;

export interface CommitData {
  name: string;
  sha: string;
  message: string;
  url: string | null;
}

export const shortSha = (sha: string) => sha.slice(0, 11);

/** Python's string.punctuation. */
const PUNCTUATION = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');
const endsInPunctuation = (text: string) => text.length > 0 && PUNCTUATION.has(text.at(-1) ?? '');

export const quote = (message: string) => `\n~~~ quote\n${message}\n~~~`;

export const topicWithBranch = (repo: string, branch: string) => `${repo} / ${branch}`;
export const topicWithPrOrIssue = (repo: string, type: string, id: number, title: string) => `${repo} / ${type} #${id} ${title}`;
export const topicWithRelease = (repo: string, tag: string, title: string) => `${repo} / ${tag} ${title}`;

function committers(commits: readonly CommitData[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const commit of commits) counts.set(commit.name, (counts.get(commit.name) ?? 0) + 1);
  // Python sorts code points, not locale order.
  const items = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  if (items.length <= COMMITTERS_LIMIT) return items;
  const others = items.slice(COMMITTERS_LIMIT).reduce((sum, [, n]) => sum + n, 0);
  return [...items.slice(0, COMMITTERS_LIMIT), ['others', others]];
}

export function commitsContent(commits: readonly CommitData[], isTruncated = false): string {
  let content = '';
  for (const commit of commits.slice(0, COMMITS_LIMIT)) {
    const firstLine = commit.message.split('\n')[0] ?? '';
    content += `* ${firstLine} ([${shortSha(commit.sha)}](${commit.url ?? 'None'}))\n`;
  }
  if (commits.length > COMMITS_LIMIT) content += `[and ${commits.length - COMMITS_LIMIT} more commit(s)]`;
  else if (isTruncated) content += '[and more commit(s)]';
  return content.trimEnd();
}

export function pushCommitsMessage(options: {
  userName: string;
  compareUrl: string | null;
  branch: string;
  commits: readonly CommitData[];
  deleted?: boolean;
  forcePush?: boolean;
  isTruncated?: boolean;
}): string {
  const { userName, compareUrl, branch, commits } = options;
  if (commits.length === 0 && options.deleted) return `${userName} [deleted](${compareUrl ?? 'None'}) the branch ${branch}.`;
  const pushType = options.forcePush ? 'force pushed' : 'pushed';
  if (commits.length === 0) {
    return compareUrl ? `${userName} [${pushType}](${compareUrl}) the branch ${branch}.` : `${userName} ${pushType} the branch ${branch}.`;
  }
  const count = `${commits.length} commit${commits.length > 1 ? 's' : ''}`;
  const pushed = compareUrl ? `[${pushType}](${compareUrl}) ${count}` : `${pushType} ${count}`;
  const base = `${userName} ${pushed} to branch ${branch}.`;
  const content = commitsContent(commits, options.isTruncated);
  const items = committers(commits);
  if (items.length === 1 && items[0]?.[0] === userName) return `${base}\n\n${content}`.trimEnd();
  const parts = items.map(([name, n]) => `${name} (${n})`);
  const last = parts.pop();
  const details = parts.length > 0 ? `${parts.join(', ')} and ${last}` : `${last}`;
  return `${base} Commits by ${details}.\n\n${content}`.trimEnd();
}

export const createBranchMessage = (userName: string, url: string | null, branch: string) =>
  url === null ? `${userName} created ${branch} branch.` : `${userName} created [${branch}](${url}) branch.`;

export const removeBranchMessage = (userName: string, branch: string) => `${userName} deleted branch ${branch}.`;

export interface PullRequestMessageOptions {
  userName: string;
  action: string;
  url: string;
  number?: number | null;
  targetBranch?: string | null;
  baseBranch?: string | null;
  message?: string | null;
  assignee?: string | null;
  /** Names (Zulip passes {username} dicts; GitLab puts the full names there). */
  assignees?: readonly string[] | null;
  /** For "assigned"/"unassigned": who was (un)assigned. */
  assigneeUpdated?: string | null;
  reviewer?: string | null;
  type?: string;
  title?: string | null;
}

const ACTION_TEXT: Readonly<Record<string, string>> = {
  approval: 'added their approval for',
  unapproval: 'removed their approval for',
};

function assigneesText(names: readonly string[]): string {
  if (names.length === 1) return names[0] ?? '';
  return `${names.slice(0, -1).join(', ')} and ${names.at(-1) ?? ''}`;
}

export function pullRequestMessage(options: PullRequestMessageOptions): string {
  const type = options.type ?? 'PR';
  const id = options.number !== undefined && options.number !== null ? ` #${options.number}` : '';
  const title = options.title ?? null;
  const action = ACTION_TEXT[options.action] ?? options.action;
  const updated =
    options.action === 'assigned'
      ? ` ${options.assigneeUpdated ?? 'None'} to`
      : options.action === 'unassigned'
        ? ` ${options.assigneeUpdated ?? 'None'} from`
        : '';
  let main = `${options.userName} ${action}${updated} [${type}${id}${title !== null ? ` ${title}` : ''}](${options.url})`;
  const hasBranches = Boolean(options.targetBranch) && Boolean(options.baseBranch);
  if (hasBranches) main += ` from \`${options.targetBranch}\` to \`${options.baseBranch}\``;
  const assignees = options.assignees && options.assignees.length > 0 ? options.assignees : null;
  if (assignees) main += ` (assigned to ${assigneesText(assignees)})`;
  else if (options.assignee) main += ` (assigned to ${options.assignee})`;
  else if (options.reviewer) main += ` (assigned reviewers: ${options.reviewer})`;
  const punctuation = options.message ? ':' : '.';
  if (assignees || options.assignee || hasBranches || title === null || !endsInPunctuation(title)) main += punctuation;
  if (options.message) main += `\n${quote(options.message)}`;
  return main.trimEnd();
}

export const issueMessage = (options: Omit<PullRequestMessageOptions, 'type' | 'targetBranch' | 'baseBranch' | 'reviewer'>) =>
  pullRequestMessage({ ...options, type: 'issue' });

export function pushTagMessage(userName: string, tagName: string, tagUrl: string | null = null, action = 'pushed'): string {
  const tag = tagUrl ? `[${tagName}](${tagUrl})` : tagName;
  const message = `${userName} ${action} tag ${tag}`;
  return endsInPunctuation(tagName) ? message : `${message}.`;
}

export function commitCommentMessage(userName: string, action: string, commitUrl: string, sha: string, message: string | null): string {
  let content = `${userName} ${action} on [${shortSha(sha)}](${commitUrl})${message ? ':' : '.'}`;
  if (message) content += quote(message);
  return content;
}

export const releaseMessage = (userName: string, action: string, tagName: string, releaseName: string, url: string) =>
  `${userName} ${action} release [${releaseName}](${url}) for tag ${tagName}.`;

/** Zulip's `branches` URL option: a comma-separated list; absent means every branch. */
export const isBranchNotifiable = (branch: string, branches: string | undefined) =>
  branches === undefined || branches.split(',').some((name) => name.trim() === branch);
