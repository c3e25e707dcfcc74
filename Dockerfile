# LiveRelay image: `liverelay serve` by default; `liverelay apns-sim` and `liverelay migrate` are in it too.
FROM swift:6.1-bookworm AS build
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
ENV HOST=0.0.0.0 PORT=8787 LIVERELAY_SQL_DIR=/app
USER liverelay
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=3s CMD ["/bin/sh", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PORT} || exit 1"]
ENTRYPOINT ["liverelay"]
CMD ["serve"]
