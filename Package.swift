// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "liverelay",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "liverelay", targets: ["LiveRelayCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/modelcontextprotocol/swift-sdk", from: "0.12.1"),
    ],
    targets: [
        // Domain types and pure logic: payloads, size checks, retry policy, configuration. No I/O.
        .target(
            name: "LiveRelayCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // The write-ahead log as a wake-up: a physical replication connection and the scanner that reads its records
        // for commits of inserts into the outbox and the broadcast log.
        .target(
            name: "LiveRelayWAL",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // PostgreSQL: migrations, outbox claims, the listener, the broadcast log.
        .target(
            name: "LiveRelayPostgres",
            dependencies: [
                "LiveRelayCore", "LiveRelayWAL",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // An HTTP/2 + TLS client that sends batches of requests over long-lived connections (APNs, FCM, OAuth).
        .target(
            name: "LiveRelayHTTP2Client",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // APNs: provider tokens, the provider API's requests and answers, and the APNs transport.
        .target(
            name: "LiveRelayAPNs",
            dependencies: [
                "LiveRelayCore", "LiveRelayHTTP2Client",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // FCM HTTP v1: OAuth access tokens from a service account, data messages, and the FCM transport.
        .target(
            name: "LiveRelayFCM",
            dependencies: [
                "LiveRelayCore", "LiveRelayHTTP2Client",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // An HTTP server for a Hummingbird router, run as a service of the caller's group (relay and simulator).
        .target(
            name: "LiveRelayHTTPServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // An APNs-compatible HTTP/2 + TLS server for local work and tests.
        .target(
            name: "APNsSimulator",
            dependencies: [
                "LiveRelayCore", "LiveRelayHTTPServer", "LiveRelayDevSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The operations on the relay's data (devices, messages, activities, deliveries, views) in domain types and
        // typed errors: used by the HTTP routes, the MCP tools and the tests.
        .target(
            name: "LiveRelayStore",
            dependencies: [
                "LiveRelayCore", "LiveRelayPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // MCP tools over the store, served over Streamable HTTP (by LiveRelayHTTP's route) and stdio. Its own target:
        // the SDK's `Server`, `Request`, `Value`, `Tool` would clash with Hummingbird's and Foundation's names.
        .target(
            name: "LiveRelayMCP",
            dependencies: [
                "LiveRelayCore", "LiveRelayStore",
                .product(name: "MCP", package: "swift-sdk"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The relay's metrics (swift-metrics, a Prometheus registry of its own), shared by the workers and /metrics.
        .target(
            name: "LiveRelayMetrics",
            dependencies: [
                "LiveRelayCore",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The delivery engine: workers that claim the outbox, send through a transport and record outcomes.
        .target(
            name: "LiveRelayDelivery",
            dependencies: [
                "LiveRelayCore", "LiveRelayPostgres", "LiveRelayMetrics",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Lifecycle webhooks: the HTTP client that POSTs signed events, and the guard on the addresses it may reach.
        .target(
            name: "LiveRelayWebhooks",
            dependencies: [
                "LiveRelayCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The foreground stream: the broadcast log tailed and handed to SSE subscribers.
        .target(
            name: "LiveRelayStream",
            dependencies: [
                "LiveRelayCore", "LiveRelayPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The HTTP API: relay routes, REST views, admin, SSE, health, metrics and the dashboard.
        .target(
            name: "LiveRelayHTTP",
            dependencies: [
                "LiveRelayCore", "LiveRelayPostgres", "LiveRelayStream", "LiveRelayStore", "LiveRelayMCP",
                "LiveRelayMetrics", "LiveRelayHTTPServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What `liverelay dev` and the tests run locally: a private PostgreSQL cluster, child processes.
        .target(
            name: "LiveRelayDevSupport",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // An FCM HTTP v1-compatible HTTP/2 + TLS server with its own OAuth token endpoint, for local work and tests.
        .target(
            name: "FCMSimulator",
            dependencies: [
                "LiveRelayCore", "LiveRelayHTTPServer", "LiveRelayDevSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Composition root: the services of `serve` wired together.
        .target(
            name: "LiveRelayServer",
            dependencies: [
                "LiveRelayCore", "LiveRelayMetrics", "LiveRelayPostgres", "LiveRelayAPNs", "LiveRelayFCM",
                "LiveRelayHTTPServer", "LiveRelayDelivery", "LiveRelayStream", "LiveRelayStore", "LiveRelayHTTP",
                "LiveRelayWebhooks",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "LiveRelayCLI",
            dependencies: [
                "LiveRelayServer", "LiveRelayDevSupport", "APNsSimulator", "FCMSimulator", "LiveRelayMCP",
                "LiveRelayStore", "LiveRelayHTTPServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Test helpers that the shipped binary has no use for (they run tools such as openssl).
        .target(
            name: "LiveRelayTestSupport",
            dependencies: ["LiveRelayDevSupport"],
            path: "Tests/LiveRelayTestSupport"
        ),
        .testTarget(
            name: "LiveRelayCoreTests",
            dependencies: [
                "LiveRelayCore", "LiveRelayAPNs", "LiveRelayHTTP2Client", "LiveRelayFCM", "LiveRelayHTTP",
                "LiveRelayHTTPServer", "LiveRelayStream", "LiveRelayPostgres", "LiveRelayDelivery",
                "LiveRelayDevSupport", "LiveRelayTestSupport", "LiveRelayWAL",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                "LiveRelayMetrics",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "LiveRelayIntegrationTests",
            dependencies: [
                "LiveRelayServer", "LiveRelayDelivery", "LiveRelayStream", "LiveRelayDevSupport", "APNsSimulator",
                "FCMSimulator", "LiveRelayHTTPServer", "LiveRelayStore", "LiveRelayMCP", "LiveRelayWebhooks",
                "LiveRelayHTTP2Client", "LiveRelayPostgres", "LiveRelayTestSupport",
                .product(name: "MCP", package: "swift-sdk"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
    ]
)
