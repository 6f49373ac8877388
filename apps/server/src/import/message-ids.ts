// The import's map of message ids (the export's → Parley's), kept in typed arrays: 12 bytes a message
// (a Map would take ~5 times that at 1,000,000 messages). Exports list messages in ascending id order
// (Zulip's partials do), so lookups are a binary search over the arrays as they are; an export out of
// order gets a sorted index, made when a lookup needs it.

export interface IdLookup {
  get(old: number): number | undefined;
}

export class MessageIdMap implements IdLookup {
  private olds = new Float64Array(1024);
  private news = new Int32Array(1024);
  private count = 0;
  private ascending = true;
  /** Positions sorted by old id, when the ids did not arrive in order (null: to be made). */
  private order: Uint32Array | null = null;

  get size(): number {
    return this.count;
  }

  /** Records a message; false when its old id is already known (checked at once when ids ascend, else by `duplicate()`). */
  add(old: number, id: number): boolean {
    if (this.count > 0 && old <= this.olds[this.count - 1]!) {
      if (this.ascending && this.find(old) !== undefined) return false;
      this.ascending = false;
    }
    if (this.count === this.olds.length) {
      const olds = new Float64Array(this.count * 2);
      olds.set(this.olds);
      this.olds = olds;
      const news = new Int32Array(this.count * 2);
      news.set(this.news);
      this.news = news;
    }
    this.olds[this.count] = old;
    this.news[this.count] = id;
    this.count++;
    this.order = null;
    return true;
  }

  get(old: number): number | undefined {
    return this.find(old);
  }

  /** An old id that appears twice, if any (for exports whose ids did not ascend). */
  duplicate(): number | undefined {
    if (this.ascending) return undefined;
    const order = this.sortedOrder();
    for (let i = 1; i < order.length; i++) if (this.olds[order[i]!] === this.olds[order[i - 1]!]) return this.olds[order[i]!];
    return undefined;
  }

  private sortedOrder(): Uint32Array {
    if (!this.order) {
      const order = new Uint32Array(this.count);
      for (let i = 0; i < this.count; i++) order[i] = i;
      const olds = this.olds;
      order.sort((a, b) => olds[a]! - olds[b]!);
      this.order = order;
    }
    return this.order;
  }

  private find(old: number): number | undefined {
    let lo = 0;
    let hi = this.count - 1;
    if (this.ascending) {
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        const v = this.olds[mid]!;
        if (v === old) return this.news[mid];
        if (v < old) lo = mid + 1;
        else hi = mid - 1;
      }
      return undefined;
    }
    const order = this.sortedOrder();
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = this.olds[order[mid]!]!;
      if (v === old) return this.news[order[mid]!];
      if (v < old) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }
}
