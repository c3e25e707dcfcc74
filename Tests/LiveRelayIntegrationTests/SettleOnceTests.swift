@testable import LiveRelayMCP
import Testing

/// POST /mcp's answer and its time limit race to end one wait: exactly one of them decides, however they interleave.
@Suite("MCP answer limit")
struct SettleOnceTests {
    @Test("of many concurrent callers, exactly one settles, and later calls do not")
    func oneWinner() async {
        for _ in 0..<50 {
            let race = SettleOnce()
            let wins = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 { group.addTask { race.settle() } }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(wins == 1)
            #expect(!race.settle())
        }
    }
}
