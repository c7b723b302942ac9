# syntax=docker/dockerfile:1
# toolgate: build with the full toolchain, run with production dependencies only.
#   docker build -t toolgate .
#   docker run -p 8080:8080 -e TOOLGATE_TOOLS_FILE=/config/tools.json -v $PWD/config:/config:ro toolgate
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
COPY --from=build /app/dist ./dist
COPY examples/tools.json ./examples/tools.json
# The operator page (/ui): static files read at start from ui/ beside dist/.
COPY ui ./ui
# The image's unprivileged user; nothing in /app is writable by it.
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM drains: /readyz turns 503, new batches are refused, batches in flight
# finish (up to TOOLGATE_SHUTDOWN_TIMEOUT_MS), then the process exits 0.
STOPSIGNAL SIGTERM
# A 64 MiB young generation: a batch's short-lived objects die there instead of
# being copied out by frequent scavenges (about a quarter more batches per core
# under load; README, Performance). npm start runs the same flags.
CMD ["node", "--max-semi-space-size=64", "dist/src/server.js"]
