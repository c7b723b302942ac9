# syntax=docker/dockerfile:1
# toolgate: build with the full toolchain, run with production dependencies only.
#   docker build -t toolgate .
#   docker run -p 127.0.0.1:8080:8080 toolgate     (the demo, open: this machine only)
#   docker run -p 8080:8080 -v "$PWD/config:/config:ro" -e TOOLGATE_TOOLS_FILE=/config/tools.yaml -e TOOLGATE_API_KEYS_FILE=/config/keys.yaml toolgate
# Node 24, the active LTS: Node 20 reached its end of life in April 2026. .ci/run runs the
# engine, routes, stores, formats and MCP tests on Node 24 as well (docs/testing.md).
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY routes routes
COPY schemas schemas
COPY examples examples
COPY bench bench
COPY scripts scripts
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
# What the server runs, no more: the compiled service and the example executor it starts
# when TOOLGATE_TOOLS_FILE is unset. The compiled bench, scripts and tests and the SDK
# orchestrator examples stay in the build stage.
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/routes ./dist/routes
COPY --from=build /app/dist/schemas ./dist/schemas
COPY --from=build /app/dist/examples/executor.js ./dist/examples/executor.js
COPY examples/tools.json ./examples/tools.json
# The operator page (/ui): static files read at start from ui/ beside dist/.
COPY ui ./ui
# The image's unprivileged user; nothing in /app is writable by it.
USER node
EXPOSE 8080
# The probe is bash's /dev/tcp (bash and grep ship in the slim image; curl and wget do not):
# a GET /healthz that passes on a 200 status line. It costs a few MB for a few milliseconds,
# where a `node -e fetch(...)` probe started a whole Node process (about 84 MB peak) every 10 s.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PORT:-8080} && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q '^HTTP/1\\.[01] 200 '"]
# SIGTERM drains: /readyz turns 503, new batches are refused, batches in flight
# finish (up to TOOLGATE_SHUTDOWN_TIMEOUT_MS), then the process exits 0.
STOPSIGNAL SIGTERM
# A 64 MiB young generation: a batch's short-lived objects die there instead of
# being copied out by frequent scavenges (about a quarter more batches per core
# under load; docs/performance.md). npm start runs the same flags.
CMD ["node", "--max-semi-space-size=64", "dist/src/server.js"]
