// The `thumbnail` job (Zulip's thumbnail queue worker): queued after commit by an image upload
// (actions/thumbnails.ts recordUploadedImage); makes the image's thumbnails and re-renders the
// messages linking it. A failure to decode is not a job failure (the image just gets no preview); a
// storage or database failure is, and is retried by the queue.
import type { AppDeps } from '../deps.ts';
import { doMakeThumbnails } from '../actions/thumbnails.ts';

export function registerThumbnailJobs(deps: AppDeps): void {
  deps.jobs.work('thumbnail', async ({ attachmentId }) => {
    const result = await doMakeThumbnails(deps, attachmentId);
    deps.logger.debug({ job: 'thumbnail', attachment_id: attachmentId, ...result }, 'thumbnails made');
  });
}
