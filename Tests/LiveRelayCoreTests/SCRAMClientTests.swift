import Testing
@testable import LiveRelayWAL

/// SCRAM-SHA-256 against RFC 7677's example exchange, and the server proofs it must refuse.
@Suite("SCRAM client")
struct SCRAMClientTests {
    static let serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"

    @Test("the client's messages and the server's proof are RFC 7677's")
    func rfcExample() throws {
        var client = SCRAMClient(user: "user", password: "pencil", clientNonce: "rOprNGfwEbeRWgbNEkqO")
        #expect(client.first == "n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
        let final = try client.final(answering: Self.serverFirst)
        #expect(final == "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            + "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
        try client.verify(serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    }

    @Test("a server that does not know the password, or changes our nonce, is refused")
    func refusals() throws {
        var client = SCRAMClient(user: "user", password: "pencil", clientNonce: "rOprNGfwEbeRWgbNEkqO")
        _ = try client.final(answering: Self.serverFirst)
        #expect(throws: SCRAMClient.Failure.serverProofMismatch) {
            try client.verify(serverFinal: "v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        }
        #expect(throws: SCRAMClient.Failure.serverError("invalid-proof")) {
            try client.verify(serverFinal: "e=invalid-proof")
        }
        var other = SCRAMClient(user: "user", password: "pencil", clientNonce: "abc")
        #expect(throws: SCRAMClient.Failure.nonceMismatch) {
            _ = try other.final(answering: "r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
        }
        #expect(throws: SCRAMClient.Failure.malformedServerMessage) {
            _ = try other.final(answering: "r=abc123,i=4096")
        }
    }
}
