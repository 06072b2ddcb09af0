#!/usr/bin/env bash
# The package as a user gets it: `npm pack`, `npm install <tarball>` into an empty directory, then
# `npx vigil validate -c <config>`, `npx vigil run` (the shipped default pipeline) until it is
# healthy and takes an OTLP request, SIGTERM, exit 0 — with no TypeScript loader anywhere in that
# directory. Run from the repository root after `npm ci` (CI runs it last; `bash scripts/pack-smoke.sh`).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/vigil-pack-smoke.XXXXXX)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

echo "pack-smoke: node $(node --version) in $WORK"
tarball=$(cd "$ROOT" && npm pack --silent --pack-destination "$WORK" | tail -1)
mkdir "$WORK/app" && cd "$WORK/app"
npm init -y >/dev/null
npm install --no-audit --no-fund --loglevel=error "$WORK/$tarball"
if [ -e node_modules/tsx ] || [ -e node_modules/typescript ]; then
  echo "pack-smoke: FAIL: installing vigil brought a TypeScript loader or compiler" >&2
  exit 1
fi

printf 'receivers:\n  otlp: {}\nprocessors:\n  classify: {}\nexporters:\n  debug: {}\nstate:\n  memory: {}\nservice:\n  pipelines:\n    logs: { receivers: [otlp], processors: [classify], exporters: [debug] }\n' > mine.yaml
npx --no-install vigil --version
npx --no-install vigil validate -c mine.yaml

otlp=$(free_port) health=$(free_port) metrics=$(free_port)
# In its own process group, so that SIGINT reaches npx and vigil together, as Ctrl-C in a terminal does.
VIGIL_OTLP_HTTP_ENDPOINT=127.0.0.1:$otlp VIGIL_HEALTH_ENDPOINT=127.0.0.1:$health VIGIL_METRICS_ADDRESS=127.0.0.1:$metrics \
  setsid npx --no-install vigil run >run.out 2>run.err &
pid=$!
for _ in $(seq 1 300); do
  if curl -fsS "http://127.0.0.1:$health/healthz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    cat run.err >&2
    echo "pack-smoke: FAIL: vigil run exited before it was ready" >&2
    exit 1
  fi
  sleep 0.1
done
curl -fsS -X POST "http://127.0.0.1:$otlp/v1/logs" -H 'content-type: application/json' \
  -d '{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"smoke"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"1767225600000000000","severityNumber":17,"body":{"stringValue":"ValueError: smoke"}}]}]}]}'
echo
kill -INT -- "-$pid"
wait "$pid" || true # npm exec itself reports 130 for SIGINT; vigil's own log says how it stopped
pid=""
if ! grep -q '"vigil stopped"' run.err || ! grep -q 'using the default pipeline' run.err || [ ! -f .vigil/state.db ]; then
  cat run.err >&2
  echo "pack-smoke: FAIL: vigil run did not start from the shipped pipeline and stop cleanly" >&2
  exit 1
fi
echo "pack-smoke: ok ($(du -sh node_modules/vigil | cut -f1) installed, $(tar -tzf "$WORK/$tarball" | wc -l) files in $tarball)"
