// The tables whose changes per-process caches follow, and how a change tells the request pipeline
// that it wrote none of them. The pipeline answers a write only once this process has heard every
// invalidation the write caused (the listener's barrier, events/listener.ts), so that the caller's next
// request never meets a cached identity or setting the change outdated. A change that wrote none of
// these tables says so, explicitly, through the CachedTableWrites its handler was given; the pipeline
// then answers without waiting. Saying nothing is always safe (the answer waits).

/**
 * Tables whose changes per-process caches follow (their triggers NOTIFY the invalidations; see the
 * credential, directory and typing-settings invalidation migrations). A test checks this list against
 * the database's triggers.
 */
export const CACHED_TABLES = ['realm', 'user', 'api_key', 'user_settings', 'custom_profile_field', 'custom_profile_field_value'] as const;

/** Where a change says what it did to CACHED_TABLES (the handler context's, passed on to the action). */
export interface CachedTableWrites {
  /**
   * The change wrote none of CACHED_TABLES (call it once the change is done, i.e. committed): its
   * answer need not wait for this process's invalidation barrier.
   */
  none(): void;
}

/** One request's CachedTableWrites, which the request pipeline makes and then asks: `untouched`. */
export class CachedTableWriteRecord implements CachedTableWrites {
  /** True once the change said it wrote none of CACHED_TABLES. */
  untouched = false;
  none(): void {
    this.untouched = true;
  }
}
