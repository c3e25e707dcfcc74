import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A private CA and a `localhost`/`127.0.0.1` server certificate it signs, made fresh for each simulator run (and,
/// for tests, client certificates it signs).
/// The CA's PEM is written to a file so a relay can trust it through `APNS_CA_FILE` or `FCM_CA_FILE`.
public struct SimulatorCertificate: Sendable {
    public let caPEM: String
    public let leafPEM: String
    public let leafKeyPEM: String
    /// The CA's key, to sign client certificates (`clientCertificate(user:)`).
    private let caKeyPEM: String
    private let caName: String

    /// - Parameter authority: the CA's name.
    public static func generate(hosts: [String] = ["localhost"], authority: String = "LiveRelay APNs simulator CA")
        throws -> SimulatorCertificate
    {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName(authority) }
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(3650 * 86_400),
            issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
            },
            issuerPrivateKey: .init(caKey))
        let leafKey = P256.Signing.PrivateKey()
        var names: [GeneralName] = [.dnsName("localhost")]
        names += hosts.filter { $0 != "localhost" && !$0.contains(":") && Int($0.prefix(while: { $0 != "." })) == nil }
            .map { .dnsName($0) }
        names.append(.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])))
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(3650 * 86_400),
            issuer: caName, subject: try DistinguishedName { CommonName("localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: .init(caKey))
        return SimulatorCertificate(
            caPEM: try ca.serializeAsPEM().pemString,
            leafPEM: try leaf.serializeAsPEM().pemString,
            leafKeyPEM: leafKey.pemRepresentation,
            caKeyPEM: caKey.pemRepresentation, caName: authority)
    }

    /// A client certificate this CA signs, naming `user` (what PostgreSQL's `cert` login compares with the role):
    /// its PEM and its key's.
    public func clientCertificate(user: String) throws -> (certificatePEM: String, keyPEM: String) {
        let now = Date()
        let caKey = try P256.Signing.PrivateKey(pemRepresentation: caKeyPEM)
        let key = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(86_400),
            issuer: try DistinguishedName { CommonName(caName) }, subject: try DistinguishedName { CommonName(user) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
            },
            issuerPrivateKey: .init(caKey))
        return (try certificate.serializeAsPEM().pemString, key.pemRepresentation)
    }

    /// Server TLS offering HTTP/2 (and HTTP/1.1) through ALPN.
    public func serverTLSConfiguration() throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(leafPEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(leafKeyPEM.utf8), format: .pem)))
        tls.applicationProtocols = ["h2", "http/1.1"]
        return tls
    }
}
