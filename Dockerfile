# LiveRelay image: `liverelay serve` by default; `liverelay apns-sim`, `migrate` and `health` are in it too.
# Built with the toolchain the project is developed and tested with (Swift 6.3; see README).
FROM swift:6.3-bookworm AS build
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product liverelay --static-swift-stdlib

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libcurl4 libxml2 tzdata \
    && rm -rf /var/lib/apt/lists/* && useradd --system --uid 10001 liverelay
WORKDIR /app
COPY --from=build /src/.build/release/liverelay /usr/local/bin/liverelay
COPY migrations ./migrations
COPY sql ./sql
COPY openapi.json ./openapi.json
COPY dashboard ./dashboard
ENV HOST=0.0.0.0 PORT=8787 LIVERELAY_SQL_DIR=/app
USER liverelay
EXPOSE 8787
# `liverelay health` asks GET /ready on $PORT (exit 0 on 200): the slim image has no shell tool that opens a socket.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["liverelay", "health"]
# SIGTERM drains and exits within 10 s (Docker's default stop timeout).
STOPSIGNAL SIGTERM
ENTRYPOINT ["liverelay"]
CMD ["serve"]
