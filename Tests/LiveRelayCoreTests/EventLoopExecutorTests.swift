import LiveRelayPostgres
import NIOCore
import NIOPosix
import Testing

@Suite("Event loop executor")
struct EventLoopExecutorTests {
    @Test("a task that prefers the loop runs there: at its start, after a sleep, an awaited future and in its children")
    func runsOnTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let seen = try await EventLoopExecutor.run(on: loop) { () async throws -> [Bool] in
            var seen = [loop.inEventLoop]
            try await Task.sleep(for: .milliseconds(1))
            seen.append(loop.inEventLoop)
            _ = try await loop.submit { 1 }.get()
            seen.append(loop.inEventLoop)
            async let child = loop.inEventLoop
            seen.append(await child)
            return seen
        }
        #expect(seen == [true, true, true, true])
        #expect(!loop.inEventLoop)
        try await group.shutdownGracefully()
    }

    @Test("without a loop the body runs as it would have")
    func withoutALoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let onLoop = await EventLoopExecutor.run(on: nil) { loop.inEventLoop }
        #expect(!onLoop)
        try await group.shutdownGracefully()
    }
}
