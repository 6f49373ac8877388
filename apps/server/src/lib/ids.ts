/** Ids in ascending order (Zulip's events and responses list ids sorted). */
export const sorted = (ids: Iterable<number>) => [...ids].sort((a, b) => a - b);
