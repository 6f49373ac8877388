-- A write sent together with COMMIT (one round trip) whose outcome the server predicted, e.g. the
-- events of a subscription stored by the very statement that makes it (apps/server/src/data/
-- subscriptions.repo.ts): the statement checks its prediction with this function, which fails it
-- (SQLSTATE PX001, so that the transaction rolls back and the server runs the change again the slow
-- way) unless `ok` is true.
CREATE FUNCTION parley_expect(ok boolean, what text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION 'parley: write expectation failed: %', what USING ERRCODE = 'PX001';
  END IF;
  RETURN TRUE;
END
$$;
