# Stops an embedded PostgreSQL whose owner went away without stopping it (see embedded.ts).
# Usage: sh postgres-watchdog.sh DATA_DIR [FILE_TO_DELETE]; standard input is a pipe from the owner.
# The owner writes "watch PID" once it has started the server, "disarm" after a clean stop. End of
# input without "disarm" means the owner is gone (even by kill -9): fast shutdown of that server, if
# the lock file still names it, and, with FILE_TO_DELETE (throwaway clusters), removal of both.
pid=
while read -r cmd arg; do
  case "$cmd" in
    watch) pid=$arg ;;
    disarm) exit 0 ;;
  esac
done
[ -n "$pid" ] || exit 0
n=0
while kill -0 "$pid" 2>/dev/null; do
  first=
  [ -f "$1/postmaster.pid" ] && read -r first < "$1/postmaster.pid"
  if [ "$first" = "$pid" ]; then
    kill -INT "$pid"
    break
  fi
  # The lock file never named it (a reused pid): not ours to stop.
  n=$((n + 1))
  [ "$n" -ge 100 ] && exit 0
  sleep 0.1
done
if [ -n "$2" ]; then
  n=0
  while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 600 ]; do
    sleep 0.1
    n=$((n + 1))
  done
  kill -0 "$pid" 2>/dev/null || rm -rf -- "$1" "$2"
fi
