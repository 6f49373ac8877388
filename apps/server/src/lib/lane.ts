// A lane: at most `limit` runs of some heavy work at once in this process, the rest waiting their turn
// in arrival order, outside the database pool. POST /register goes through one (server.ts): a
// registration reads the whole state in one repeatable-read transaction, holding a pooled connection
// for all its statements; arrivals in a burst (a step of the load test, everyone reconnecting after a
// restart) would otherwise take every connection of the pool for seconds while the one-statement
// requests of the users already online queue behind them (bench/README.md, eighth session). More
// registrations at once would not finish sooner: they share the same cores.

export interface Lane {
  /** Runs `work` once fewer than `limit` runs are under way (first come, first served). */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Runs under way and waiting (figures, tests). */
  readonly running: number;
  readonly waiting: number;
}

export function createLane(limit: number): Lane {
  if (!Number.isInteger(limit) || limit < 1) throw new Error(`a lane needs a limit of at least 1, got ${limit}`);
  let running = 0;
  const waiting: Array<() => void> = [];
  const leave = () => {
    const next = waiting.shift();
    if (next) next(); // the place passes straight to the next in line
    else running--;
  };
  return {
    async run(work) {
      if (running < limit) running++;
      else await new Promise<void>((resolve) => waiting.push(resolve));
      try {
        return await work();
      } finally {
        leave();
      }
    },
    get running() {
      return running;
    },
    get waiting() {
      return waiting.length;
    },
  };
}
