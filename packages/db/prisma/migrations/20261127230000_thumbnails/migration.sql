-- Thumbnails of uploaded images (issue 24, part 2): Zulip's ImageAttachment. A row exists for an
-- uploaded file whose header decoded as an image within the pixel limit; it records the image as
-- rendered (dimensions after EXIF orientation, frame count, claimed content type) and the thumbnails
-- made so far (empty until the thumbnail job has run). The thumbnails live in storage under
-- `thumbnails/<path_id>/<format>`.
CREATE TABLE "image_attachment" (
    "attachment_id" INTEGER NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "path_id" TEXT NOT NULL,
    "original_width_px" INTEGER NOT NULL,
    "original_height_px" INTEGER NOT NULL,
    "frames" INTEGER NOT NULL,
    "content_type" TEXT,
    -- One object per thumbnail made: {extension, content_type, max_width, max_height, animated, width, height, byte_size}.
    "thumbnail_metadata" JSONB NOT NULL DEFAULT '[]',

    CONSTRAINT "image_attachment_pkey" PRIMARY KEY ("attachment_id")
);
CREATE UNIQUE INDEX "image_attachment_path_id_key" ON "image_attachment"("path_id");
ALTER TABLE "image_attachment" ADD CONSTRAINT "image_attachment_attachment_id_fkey" FOREIGN KEY ("attachment_id") REFERENCES "attachment"("id") ON DELETE CASCADE ON UPDATE CASCADE;
