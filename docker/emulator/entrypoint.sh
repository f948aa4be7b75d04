#!/bin/sh
# Start `rebalance-lab serve` on all interfaces, advertising the address clients dial.
#
# The environment sets the network (defaults in brackets):
#   REBALANCE_LAB_PORT [9092]                port of broker 0 in the container (broker i: PORT+i)
#   REBALANCE_LAB_ADVERTISED_HOST [localhost] host given to clients (Metadata, FindCoordinator)
#   REBALANCE_LAB_ADVERTISED_PORT [PORT]     port given to clients for broker 0: the published port
#   REBALANCE_LAB_INITIAL_REBALANCE_DELAY_MS [0]  as the official apache/kafka image's configuration
# Arguments are more `serve` options (they win over the above), e.g. --topic orders:6.
# A first argument that is not an option runs that command instead (e.g. `bash`).
set -eu
case "${1:-}" in
    "" | -*) ;;
    *) exec "$@" ;;
esac
port="${REBALANCE_LAB_PORT:-9092}"
exec rebalance-lab serve \
    --host 0.0.0.0 \
    --port "$port" \
    --advertised-host "${REBALANCE_LAB_ADVERTISED_HOST:-localhost}" \
    --advertised-port "${REBALANCE_LAB_ADVERTISED_PORT:-$port}" \
    --initial-rebalance-delay-ms "${REBALANCE_LAB_INITIAL_REBALANCE_DELAY_MS:-0}" \
    "$@"
