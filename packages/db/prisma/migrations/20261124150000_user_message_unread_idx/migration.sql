-- The unread partial index again, beside the per-user index (user_id, flags & 1, message_id) of
-- migration 20261124130000. Without it, PostgreSQL 18 planned a user's unread rows (unread_msgs of
-- /register, mark-all-as-read) through the key (message_id, user_id) with user_id as an index
-- condition, reading every row after the oldest one wanted, other users' included, and their heap
-- tuples for the flag: /register at 100,000 unread went from ~135 to ~220 ms, and to ~320 ms at 60,000
-- unread direct messages. With deferred rows, sending writes few rows, so one more entry per unread
-- row costs sending little; catching up pays it.
CREATE INDEX "user_message_unread_idx" ON "user_message" ("user_id", "message_id") WHERE ("flags" & 1) = 0;
