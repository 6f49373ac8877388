/** The Zulip API feature level whose behaviour Parley implements (see README, "Compatibility"). */
export const FEATURE_LEVEL = 420;
export const MERGE_BASE = '11.0';
export const ZULIP_VERSION = '11.0-parley';
