// How the pipeline's steps (http/pipeline.ts), and the validator's own middlewares inside its validate
// step, are run: in turn, as Express runs middlewares, but as plain calls (no router, no layers).
import type { NextFunction, Request, Response } from 'express';

/** A step has Express's middleware shape: next() goes on; next(error), a throw or a rejection ends the run. */
export type Step = (req: Request, res: Response, next: NextFunction) => unknown;

/** Runs the steps in turn; `done` gets the failure that ended the run, or nothing after the last step. */
export function runSteps(steps: readonly Step[], req: Request, res: Response, done: (error?: unknown) => void): void {
  let i = 0;
  const next = (error?: unknown) => {
    if (error !== undefined && error !== null) return done(error);
    const step = steps[i++];
    if (!step) return done();
    try {
      const result = step(req, res, next) as { then?: unknown } | undefined;
      if (result && typeof result.then === 'function') (result as Promise<unknown>).then(undefined, (e: unknown) => done(e ?? new Error('Rejected promise')));
    } catch (e) {
      done(e);
    }
  };
  next();
}
